use super::render::{RenderError, SecretData, render};
use super::*;
use extension_sdk::api::extensions::OperatingSystemConfigSpec;
use extension_sdk::api::extensions::operatingsystemconfig::{DropIn, FileContentInline};

fn inline(path: &str, data: &str, encoding: &str, permissions: Option<i32>) -> File {
    File {
        path: path.into(),
        permissions,
        content: FileContent {
            inline: Some(FileContentInline { encoding: encoding.into(), data: data.into() }),
            ..Default::default()
        },
    }
}

fn spec() -> OperatingSystemConfigSpec {
    OperatingSystemConfigSpec {
        purpose: OperatingSystemConfigPurpose::Provision,
        units: vec![
            Unit {
                name: "kubelet.service".into(),
                command: Some(UnitCommand::Restart),
                enable: Some(true),
                content: Some("[Service]\nExecStart=/opt/bin/kubelet\n".into()),
                drop_ins: vec![DropIn { name: "10-opts.conf".into(), content: "[Service]\nEnvironment=A=1\n".into() }],
                file_paths: vec!["/var/lib/kubelet/ca.crt".into()],
            },
            Unit { name: "containerd.service".into(), command: Some(UnitCommand::Start), ..Default::default() },
        ],
        files: vec![
            inline("/var/lib/kubelet/ca.crt", "Q0EK", "b64", None),
            inline("/etc/motd", "it's local\n", "", Some(0o600)),
            File {
                path: "/var/lib/kubelet/token".into(),
                permissions: Some(0o400),
                content: FileContent {
                    secret_ref: Some(FileContentSecretRef { name: "token".into(), data_key: "t".into() }),
                    ..Default::default()
                },
            },
            File {
                path: "/etc/raw.txt".into(),
                permissions: None,
                content: FileContent {
                    inline: Some(FileContentInline {
                        encoding: String::new(),
                        data: "PROVIDER_LOCAL_EOF\nno newline".into(),
                    }),
                    transmit_unencoded: Some(true),
                    ..Default::default()
                },
            },
        ],
        ..Default::default()
    }
}

fn secrets() -> SecretData {
    SecretData::from([(("token".to_string(), "t".to_string()), b"s3cret".to_vec())])
}

fn script(spec: &OperatingSystemConfigSpec) -> String {
    String::from_utf8(render("ns", "osc-a", spec, &secrets()).map(|r| r.script).unwrap_or_default()).unwrap_or_default()
}

#[test]
fn renders_files_units_permissions_and_encodings() {
    let s = script(&spec());
    assert!(s.starts_with("#!/bin/bash\n# Rendered by provider-local from OperatingSystemConfig ns/osc-a"), "{s}");
    // base64 inline is decoded before being re-encoded for transport: "CA\n".
    assert!(s.contains("base64 -d > '/var/lib/kubelet/ca.crt' <<'PROVIDER_LOCAL_EOF'\nQ0EK\nPROVIDER_LOCAL_EOF\nchmod 0644 '/var/lib/kubelet/ca.crt'"), "{s}");
    assert!(s.contains("base64 -d > '/etc/motd' <<'PROVIDER_LOCAL_EOF'\naXQncyBsb2NhbAo=\n"), "{s}");
    assert!(s.contains("chmod 0600 '/etc/motd'"));
    assert!(s.contains("base64 -d > '/var/lib/kubelet/token' <<'PROVIDER_LOCAL_EOF'\nczNjcmV0\n"), "{s}");
    assert!(s.contains("chmod 0400 '/var/lib/kubelet/token'"));
    // Unencoded: verbatim, exact length, a delimiter that does not occur in the content.
    assert!(
        s.contains(
            "head -c 29 > '/etc/raw.txt' <<'PROVIDER_LOCAL_EOF_'\nPROVIDER_LOCAL_EOF\nno newline\nPROVIDER_LOCAL_EOF_\n"
        ),
        "{s}"
    );
    assert!(s.contains("mkdir -p '/etc/systemd/system/kubelet.service.d'"));
    assert!(s.contains("systemctl daemon-reload\n"));
    assert!(s.contains("systemctl enable 'kubelet.service'\n"));
    assert!(!s.contains("systemctl enable 'containerd.service'"), "a unit without content is not enabled");
    assert!(s.contains("systemctl restart 'kubelet.service'\n"));
    assert!(s.contains("systemctl start 'containerd.service'\n"));
    assert!(s.contains("osc-checksums/kubelet.service"));
    // Units by name: containerd before kubelet.
    assert!(s.find("systemctl start 'containerd.service'") < s.find("systemctl enable 'kubelet.service'"));
}

#[test]
fn same_input_gives_byte_identical_output_in_any_order() {
    let a = render("ns", "osc-a", &spec(), &secrets());
    let b = render("ns", "osc-a", &spec(), &secrets());
    assert!(a.is_ok());
    assert_eq!(a, b);
    let mut reordered = spec();
    reordered.files.reverse();
    reordered.units.reverse();
    assert_eq!(render("ns", "osc-a", &reordered, &secrets()), a);
    let mut changed = spec();
    changed.files[1] = inline("/etc/motd", "other\n", "", Some(0o600));
    assert_ne!(render("ns", "osc-a", &changed, &secrets()), a);
}

#[test]
fn a_changed_file_changes_the_restart_checksum_of_its_unit() {
    let checksum = |s: &str| s.lines().find(|l| l.contains("osc-checksums/kubelet.service'")).map(str::to_string);
    let mut changed = spec();
    changed.files[0] = inline("/var/lib/kubelet/ca.crt", "other", "", None);
    assert_ne!(checksum(&script(&spec())), checksum(&script(&changed)));
    assert!(checksum(&script(&spec())).is_some());
}

#[test]
fn invalid_specs_name_the_field() {
    type Change = Box<dyn Fn(&mut OperatingSystemConfigSpec)>;
    let cases: Vec<(Change, &str)> = vec![
        (Box::new(|s| s.files[0].path = "relative".into()), "spec.files[0].path"),
        (Box::new(|s| s.files[1].path = "/var/lib/kubelet/ca.crt".into()), "spec.files[1].path"),
        (Box::new(|s| s.files[0] = inline("/x", "%%%", "b64", None)), "spec.files[0].content.inline.data"),
        (Box::new(|s| s.files[0] = inline("/x", "a", "gzip", None)), "spec.files[0].content.inline.encoding"),
        (Box::new(|s| s.files[1].permissions = Some(0o10000)), "spec.files[1].permissions"),
        (Box::new(|s| s.units[0].name = "a/b".into()), "spec.units[0].name"),
        (Box::new(|s| s.units[0].file_paths = vec!["/nope".into()]), "spec.units[0].filePaths"),
        (Box::new(|s| s.files[2].content.inline = Some(FileContentInline::default())), "spec.files[2].content"),
    ];
    for (change, field) in cases {
        let mut s = spec();
        change(&mut s);
        match render("ns", "osc-a", &s, &secrets()) {
            Err(RenderError::Invalid { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    match render("ns", "osc-a", &spec(), &SecretData::new()) {
        Err(RenderError::MissingSecret { field, secret, key }) => {
            assert_eq!(
                (field.as_str(), secret.as_str(), key.as_str()),
                ("spec.files[2].content.secretRef", "token", "t")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn reconcile_purpose_adds_the_apply_unit_and_script_file() {
    let mut osc = OperatingSystemConfig::new("osc-a", spec());
    osc.metadata.namespace = Some("ns".into());
    let provision = output(&osc, &secrets(), None).unwrap_or_default();
    assert!(provision.extension_units.is_empty() && provision.extension_files.is_empty());
    assert_eq!(provision.units, vec!["containerd.service", "kubelet.service"]);
    assert_eq!(provision.command.as_deref(), Some("/bin/bash '/var/lib/provider-local/osc/osc-a.sh'"));

    osc.spec.purpose = OperatingSystemConfigPurpose::Reconcile;
    let reconcile = output(&osc, &secrets(), None).unwrap_or_default();
    assert_eq!(reconcile.user_data, provision.user_data);
    assert_eq!(reconcile.extension_units.len(), 1);
    assert_eq!(reconcile.extension_units[0].name, "provider-local-osc-osc-a.service");
    assert_eq!(reconcile.extension_files[0].path, "/var/lib/provider-local/osc/osc-a.sh");
    let secret_ref = reconcile.extension_files[0].content.secret_ref.clone().unwrap_or_default();
    assert_eq!((secret_ref.name.as_str(), secret_ref.data_key.as_str()), ("cloud-config-osc-a", "cloud_config"));
    assert_eq!(reconcile.units, vec!["containerd.service", "kubelet.service", "provider-local-osc-osc-a.service"]);
}

#[test]
fn a_registry_mirror_writes_the_hosts_files_and_ca_before_any_unit_starts() {
    let ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    let mirror = crate::registry::RegistryMirror::new("https://10.250.0.1:5000", ca).unwrap();
    let mut osc = OperatingSystemConfig::new("osc-a", spec());
    osc.metadata.namespace = Some("ns".into());
    let without = String::from_utf8(output(&osc, &secrets(), None).unwrap().user_data).unwrap();
    assert!(!without.contains("certs.d"), "no mirror, no registry configuration");
    let with = String::from_utf8(output(&osc, &secrets(), Some(&mirror)).unwrap().user_data).unwrap();
    let first_unit = with.find("systemctl ").unwrap();
    for path in [
        "/etc/containerd/certs.d/gardener-rs.local/hosts.toml",
        "/etc/containerd/certs.d/registry.k8s.io/hosts.toml",
        "/etc/provider-local/registry-ca.crt",
    ] {
        let at = with.find(&format!("# file {path}\n")).unwrap_or_else(|| panic!("{path} is written"));
        assert!(at < first_unit, "{path} is written before any unit starts");
    }
    // The spec's own files are still there, and the result is stable.
    assert!(with.contains("# file /var/lib/kubelet/ca.crt"));
    assert_eq!(output(&osc, &secrets(), Some(&mirror)).unwrap().user_data, with.into_bytes());
    // A path the spec writes itself stays the spec's.
    osc.spec.files.push(inline("/etc/provider-local/registry-ca.crt", "mine", "", None));
    let own = String::from_utf8(output(&osc, &secrets(), Some(&mirror)).unwrap().user_data).unwrap();
    assert_eq!(own.matches("# file /etc/provider-local/registry-ca.crt").count(), 1);
}
