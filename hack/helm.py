#!/usr/bin/env python3
"""Helm for scripts and tests, through helm-sdkpy (Helm's own Go library; Helm itself is not in
Debian). Install it with hack/setup-helm.sh.

    helm.py lint CHART [--values FILE]... [--set-json K=JSON]...
    helm.py install|upgrade RELEASE CHART [--namespace NS] [--values FILE]... [--set-json K=JSON]...
                            [--kubeconfig FILE] [--no-wait] [--timeout SECONDS] [--reuse-values]
    helm.py uninstall RELEASE [--namespace NS] [--kubeconfig FILE]
    helm.py status RELEASE [--namespace NS] [--kubeconfig FILE]

`upgrade` installs when the release does not exist yet; with `--reuse-values` it keeps the
release's current values and merges the given ones over them, as `helm upgrade --reuse-values`.
Results go to stdout as JSON, progress and errors to stderr; the exit code is 0 only on
success. `lint` fails on any error or warning message Helm reports, not only on errors. With
values, `lint` checks them as `helm lint -f` does (merged over the chart's own, validated
against values.schema.json); helm-sdkpy passes Helm's messages on without their text, so when
the schema refuses values, the offending fields are named with the Python package jsonschema
(when it is installed).
"""

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile

try:
    import yaml  # PyYAML: values files
except ImportError:  # pragma: no cover
    yaml = None

try:
    import helm_sdkpy as helm
except ImportError:
    sys.exit("helm.py: helm-sdkpy is missing; run hack/setup-helm.sh")


def deep_merge(base, override, null_removes=False):
    """Merges `override` into `base`, maps key by key. With `null_removes` (Helm's merge of
    values over a chart's own), a null removes the key instead of setting it."""
    for key, value in override.items():
        if null_removes and value is None and key in base:
            del base[key]
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value, null_removes)
        else:
            base[key] = value
    return base


def set_path(values, dotted, value):
    keys = dotted.split(".")
    for key in keys[:-1]:
        values = values.setdefault(key, {})
    values[keys[-1]] = value


def load_values(args):
    values = {}
    for path in args.values or []:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        loaded = json.loads(text) if path.endswith(".json") or yaml is None else yaml.safe_load(text)
        deep_merge(values, loaded or {})
    for item in args.set_json or []:
        key, _, raw = item.partition("=")
        set_path(values, key, json.loads(raw))
    return values


def chart_with_values(chart, overrides, workdir):
    """A copy of `chart` (links resolved) whose values.yaml is its own with `overrides` merged in."""
    copy = os.path.join(workdir, os.path.basename(os.path.abspath(chart)))
    shutil.copytree(chart, copy)
    path = os.path.join(copy, "values.yaml")
    with open(path, encoding="utf-8") as f:
        values = yaml.safe_load(f) or {}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(deep_merge(values, overrides, null_removes=True), f, indent=2)  # JSON is YAML
    return copy


def schema_errors(chart):
    """`path: message` for each value of `chart` its values.schema.json refuses (empty without jsonschema)."""
    try:
        import jsonschema
    except ImportError:
        return []
    schema_path = os.path.join(chart, "values.schema.json")
    if not os.path.exists(schema_path):
        return []
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    with open(os.path.join(chart, "values.yaml"), encoding="utf-8") as f:
        values = yaml.safe_load(f) or {}
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(values), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(top level)'}: {e.message}" for e in errors]


async def lint_chart(config, chart, name):
    """Lints the chart at `chart`; returns why it failed (naming it `name`), or None."""
    result = await helm.Lint(config).run(chart)
    print(json.dumps(result, indent=2))
    # Helm's support.Message severities: 1 info, 2 warning, 3 error.
    bad = [m for m in result.get("Messages") or [] if m.get("Severity", 0) > 1]
    if bad or result.get("Errors"):
        for problem in schema_errors(chart) if yaml else []:
            print(f"helm.py: values.schema.json refuses {problem}", file=sys.stderr)
        paths = ", ".join(sorted({m.get("Path", "?") for m in bad}))
        return f"helm.py: {name} does not lint clean ({paths or 'see Errors'})"
    return None


async def main():
    parser = argparse.ArgumentParser(prog="helm.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    lint = sub.add_parser("lint")
    lint.add_argument("chart")
    lint.add_argument("--values", "-f", action="append")
    lint.add_argument("--set-json", action="append")
    for name in ("install", "upgrade"):
        p = sub.add_parser(name)
        p.add_argument("release")
        p.add_argument("chart")
        p.add_argument("--values", "-f", action="append")
        p.add_argument("--set-json", action="append")
        p.add_argument("--no-wait", action="store_true")
        if name == "upgrade":
            # As `helm upgrade --reuse-values`: the release's current values, these merged over them.
            p.add_argument("--reuse-values", action="store_true")
        p.add_argument("--timeout", type=int, default=300)
    for name in ("uninstall", "status"):
        p = sub.add_parser(name)
        p.add_argument("release")
    for p in sub.choices.values():
        p.add_argument("--namespace", "-n", default="garden")
        p.add_argument("--kubeconfig")
    args = parser.parse_args()

    config = helm.Configuration(namespace=args.namespace, kubeconfig=args.kubeconfig)
    if args.command == "lint":
        if not (args.values or args.set_json):
            failure = await lint_chart(config, args.chart, args.chart)
        elif yaml is None:
            sys.exit("helm.py: lint with values needs PyYAML; run hack/setup-helm.sh")
        else:
            with tempfile.TemporaryDirectory(prefix="helm-lint-") as workdir:
                chart = chart_with_values(args.chart, load_values(args), workdir)
                failure = await lint_chart(config, chart, f"{args.chart} with these values")
        if failure:
            sys.exit(failure)
        return
    if args.command in ("install", "upgrade"):
        values = load_values(args)
        wait = not args.no_wait
        installed = any(r.get("name") == args.release for r in (await helm.List(config).run(all=True)) or [])
        if args.command == "upgrade" and installed:
            result = await helm.Upgrade(config).run(
                args.release, args.chart, values=values, wait=wait, timeout=args.timeout, reuse_values=args.reuse_values
            )
        else:
            result = await helm.Install(config).run(
                args.release, args.chart, values=values, wait=wait, timeout=args.timeout, create_namespace=True
            )
    elif args.command == "uninstall":
        result = await helm.Uninstall(config).run(args.release)
    else:
        result = await helm.Status(config).run(args.release)
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except helm.HelmError as e:
        sys.exit(f"helm.py: {e}")
