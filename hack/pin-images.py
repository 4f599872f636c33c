#!/usr/bin/env python3
"""Pins image references to the digests the local registry serves for them.

    pin-images.py --registry https://10.250.0.1:5000 --ca CA.crt ref <image>
        prints <image>@sha256:... (`name:tag@digest`: the tag stays readable, the digest is what
        the runtime pulls)
    pin-images.py --registry ... --ca ... cloudprofile < garden.yaml > pinned.yaml
        copies the YAML documents, with every CloudProfile's provider-local machine image
        (spec.providerConfig.machineImages[].versions[].image) pinned

So a shoot's machines run exactly the image that was built and pushed, whatever later happens to
the tag (docs/security.md, "Machines pull by digest"). A reference that already has a digest is
kept; one the registry does not have is an error naming it.
"""
import argparse
import ssl
import sys
import urllib.error
import urllib.request

import yaml

ACCEPT = ", ".join([
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
])


def split(image):
    """`host/path/name:tag` -> (`host/path/name`, `tag`); no tag means `latest`."""
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = image.rsplit(":", 1)
        return name, tag
    return image, "latest"


def digest(registry, context, image):
    name, tag = split(image)
    url = f"{registry}/v2/{name}/manifests/{tag}"
    request = urllib.request.Request(url, method="HEAD", headers={"Accept": ACCEPT})
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            value = response.headers.get("Docker-Content-Digest", "")
    except urllib.error.HTTPError as e:
        sys.exit(f"pin-images: {image}: the registry answered {e.code} for {url}; build and push it (make images)")
    except urllib.error.URLError as e:
        sys.exit(f"pin-images: {image}: cannot reach {registry}: {e.reason}")
    if not value.startswith("sha256:"):
        sys.exit(f"pin-images: {image}: the registry sent no digest for {url}")
    return value


def pin(registry, context, image):
    if "@" in image:
        return image
    return f"{image}@{digest(registry, context, image)}"


def pin_cloudprofiles(registry, context, text):
    docs = list(yaml.safe_load_all(text))
    for doc in docs:
        if not doc or doc.get("kind") != "CloudProfile":
            continue
        config = (doc.get("spec") or {}).get("providerConfig") or {}
        for image in config.get("machineImages") or []:
            for version in image.get("versions") or []:
                if version.get("image"):
                    version["image"] = pin(registry, context, version["image"])
    return yaml.safe_dump_all(docs, sort_keys=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--registry", required=True)
    parser.add_argument("--ca", required=True)
    sub = parser.add_subparsers(dest="command", required=True)
    ref = sub.add_parser("ref")
    ref.add_argument("image")
    sub.add_parser("cloudprofile")
    args = parser.parse_args()
    context = ssl.create_default_context(cafile=args.ca)
    registry = args.registry.rstrip("/")
    if args.command == "ref":
        print(pin(registry, context, args.image))
    else:
        sys.stdout.write(pin_cloudprofiles(registry, context, sys.stdin.read()))


if __name__ == "__main__":
    main()
