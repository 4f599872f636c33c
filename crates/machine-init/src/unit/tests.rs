#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use super::*;

const KUBELET: &str = "[Unit]\nDescription=kubelet v1.20.2\nAfter=containerd.service\n\n[Service]\nRestart=always\nEnvironment=\"A=1\" B=two\nExecStart=/opt/bin/kubelet \\\n  --bootstrap-kubeconfig=/var/lib/kubelet/kubeconfig-bootstrap \\\n  --config=/var/lib/kubelet/config.yaml $EXTRA\n\n[Install]\nWantedBy=multi-user.target\n";

#[test]
fn a_gardener_style_kubelet_unit_parses_with_continuations() {
    let s = parse("kubelet.service", KUBELET, &[]).unwrap();
    assert_eq!(s.after, vec!["containerd.service"]);
    assert_eq!(s.restart, Restart::Always);
    assert_eq!(s.kind, Kind::Simple);
    assert_eq!(s.environment.get("A").map(String::as_str), Some("1"));
    assert_eq!(s.environment.get("B").map(String::as_str), Some("two"));
    assert_eq!(
        s.exec_start[0].words,
        vec![
            "/opt/bin/kubelet",
            "--bootstrap-kubeconfig=/var/lib/kubelet/kubeconfig-bootstrap",
            "--config=/var/lib/kubelet/config.yaml",
            "$EXTRA"
        ]
    );
}

#[test]
fn drop_ins_append_environment_and_an_empty_exec_start_resets() {
    let drop_in = "[Service]\nEnvironment=EXTRA=--v=2\nExecStart=\nExecStart=-/bin/true x\n";
    let s = parse("kubelet.service", KUBELET, &[drop_in]).unwrap();
    assert_eq!(s.exec_start.len(), 1);
    assert_eq!(s.exec_start[0], Command { words: vec!["/bin/true".into(), "x".into()], ignore_failure: true });
    assert_eq!(s.environment.get("EXTRA").map(String::as_str), Some("--v=2"));
    assert_eq!(s.environment.get("A").map(String::as_str), Some("1"));
}

#[test]
fn oneshot_units_keep_every_command_in_order() {
    let s = parse(
        "apply.service",
        "[Service]\nType=oneshot\nExecStart=/bin/bash /a.sh\nExecStart=/bin/echo done\nRestartSec=2s\n",
        &[],
    )
    .unwrap();
    assert_eq!(s.kind, Kind::Oneshot);
    assert_eq!(s.exec_start.len(), 2);
    assert_eq!(s.restart_sec, Duration::from_secs(2));
}

#[test]
fn errors_name_the_unit_and_line() {
    let e = parse("x.service", "[Service]\nExecStart=/bin/a 'unclosed\n", &[]).unwrap_err();
    assert!(matches!(&e, UnitError::Syntax { unit, line: 2, .. } if unit == "x.service"), "{e}");
    let e = parse("x.service", "[Service]\nRestart=sometimes\n", &[]).unwrap_err();
    assert!(e.to_string().contains("Restart=sometimes"), "{e}");
    let e = parse("x.service", "[Service]\nnonsense\n", &[]).unwrap_err();
    assert!(e.to_string().starts_with("x.service: line 2"), "{e}");
    let e = parse("x.service", "[Unit]\nDescription=none\n", &[]).unwrap_err();
    assert_eq!(e, UnitError::NoExecStart { unit: "x.service".into() });
    assert!(parse("x.service", "[Service]\nRestartSec=soon\nExecStart=/a\n", &[]).is_err());
}

#[test]
fn variables_expand_as_systemd_expands_them() {
    let env = BTreeMap::from([("EXTRA".to_string(), "--a=1  --b=2".to_string()), ("DIR".to_string(), "/x".into())]);
    let words: Vec<String> = ["/bin/k", "$EXTRA", "--root=${DIR}/y", "$UNSET", "${UNSET}z", "${open"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(expand(&words, &env), vec!["/bin/k", "--a=1", "--b=2", "--root=/x/y", "z", "${open"]);
}

#[test]
fn environment_files_are_read_like_systemd_reads_them() {
    let env = environment_file("# comment\nA=1\nB=\"two words\"\n\nC = x\n");
    assert_eq!(env.get("A").map(String::as_str), Some("1"));
    assert_eq!(env.get("B").map(String::as_str), Some("two words"));
    assert_eq!(env.get("C").map(String::as_str), Some("x"));
}
