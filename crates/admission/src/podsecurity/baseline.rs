//! The `baseline` checks (upstream's `hostProcess`, `hostNamespaces`, `privileged`,
//! `capabilities_baseline`, `hostPathVolumes`, `hostPorts`, `appArmorProfile`,
//! `seLinuxOptions`, `procMount`, `seccompProfile_baseline`, `sysctls`). At `restricted` the
//! seccomp and capabilities checks are the stricter ones of [`super::restricted`] instead.

use super::{ContainerView, Level, Violation, containers, pod_field};
use crate::field::Path;
use k8s_openapi::api::core::v1::{PodSpec, SELinuxOptions};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The capabilities a container may add at `baseline` (the container runtimes' default set).
pub const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The sysctls a pod may set (namespaced and isolated from the host).
pub const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

/// The SELinux types a pod or container may set.
const SELINUX_TYPES: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"];

const APPARMOR_ANNOTATION: &str = "container.apparmor.security.beta.kubernetes.io/";
const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_ANNOTATION: &str = "container.seccomp.security.alpha.kubernetes.io/";

pub(super) fn check(spec: &PodSpec, meta: &ObjectMeta, level: Level, out: &mut Vec<Violation>) {
    let containers = containers(spec);
    host_process(spec, &containers, out);
    host_namespaces(spec, out);
    for c in &containers {
        container(c, level, out);
    }
    for (i, v) in spec.volumes.iter().flatten().enumerate() {
        if v.host_path.is_some() {
            let path = Path::new("spec").child("volumes").index(i).child("hostPath");
            out.push(Violation::new("hostPath volumes", path, format!("volume {:?}", v.name)));
        }
    }
    app_armor(spec, meta, out);
    se_linux(spec, &containers, out);
    // At restricted, the stricter seccomp check of the fields replaces this one.
    if level < Level::Restricted {
        seccomp_unconfined(spec, &containers, out);
    }
    seccomp_annotations(meta, out);
    sysctls(spec, out);
}

fn host_process(spec: &PodSpec, containers: &[ContainerView<'_>], out: &mut Vec<Violation>) {
    let pod = spec.security_context.as_ref().and_then(|s| s.windows_options.as_ref()).and_then(|w| w.host_process);
    if pod == Some(true) {
        let path = pod_field("windowsOptions.hostProcess");
        out.push(Violation::new(
            "hostProcess",
            path,
            "pod must not set securityContext.windowsOptions.hostProcess=true",
        ));
    }
    for c in containers {
        let set = c.security_context.and_then(|s| s.windows_options.as_ref()).and_then(|w| w.host_process);
        if set == Some(true) {
            out.push(Violation::new(
                "hostProcess",
                c.field("windowsOptions.hostProcess"),
                format!("container {:?} must not set securityContext.windowsOptions.hostProcess=true", c.name),
            ));
        }
    }
}

fn host_namespaces(spec: &PodSpec, out: &mut Vec<Violation>) {
    for (field, set) in [("hostNetwork", spec.host_network), ("hostPID", spec.host_pid), ("hostIPC", spec.host_ipc)] {
        if set == Some(true) {
            out.push(Violation::new("host namespaces", Path::new("spec").child(field), format!("{field}=true")));
        }
    }
}

/// The per-container baseline checks: privileged, added capabilities, host ports, procMount.
fn container(c: &ContainerView<'_>, level: Level, out: &mut Vec<Violation>) {
    let sc = c.security_context;
    if sc.and_then(|s| s.privileged) == Some(true) {
        out.push(Violation::new(
            "privileged",
            c.field("privileged"),
            format!("container {:?} must not set securityContext.privileged=true", c.name),
        ));
    }
    // At restricted, the stricter capabilities check replaces this one (upstream overrides it).
    if level < Level::Restricted {
        let added = sc.and_then(|s| s.capabilities.as_ref()).and_then(|c| c.add.as_deref()).unwrap_or_default();
        for (i, cap) in added.iter().enumerate() {
            if !BASELINE_CAPABILITIES.contains(&cap.as_str()) {
                out.push(Violation::new(
                    "non-default capabilities",
                    c.field("capabilities.add").index(i),
                    format!("container {:?} must not include {cap:?} in securityContext.capabilities.add", c.name),
                ));
            }
        }
    }
    for (i, port) in c.ports.iter().enumerate() {
        if let Some(host_port) = port.host_port.filter(|p| *p != 0) {
            out.push(Violation::new(
                "hostPort",
                c.path.child("ports").index(i).child("hostPort"),
                format!("container {:?} uses hostPort {host_port}", c.name),
            ));
        }
    }
    if let Some(mount) = sc.and_then(|s| s.proc_mount.as_deref()).filter(|m| *m != "Default") {
        out.push(Violation::new(
            "procMount",
            c.field("procMount"),
            format!("container {:?} must not set securityContext.procMount to {mount:?}", c.name),
        ));
    }
}

fn app_armor(spec: &PodSpec, meta: &ObjectMeta, out: &mut Vec<Violation>) {
    for (key, value) in meta.annotations.iter().flatten() {
        if key.starts_with(APPARMOR_ANNOTATION)
            && !(value.is_empty() || value == "runtime/default" || value.starts_with("localhost/"))
        {
            out.push(Violation::new(
                "forbidden AppArmor profile",
                Path::new("metadata").child("annotations").key(key),
                format!("{key}={value:?}"),
            ));
        }
    }
    let forbidden = |t: &str| !matches!(t, "RuntimeDefault" | "Localhost");
    if let Some(p) =
        spec.security_context.as_ref().and_then(|s| s.app_armor_profile.as_ref()).filter(|p| forbidden(&p.type_))
    {
        out.push(Violation::new(
            "forbidden AppArmor profile",
            pod_field("appArmorProfile.type"),
            format!("pod must not set securityContext.appArmorProfile.type to {:?}", p.type_),
        ));
    }
    for c in containers(spec) {
        if let Some(p) = c.security_context.and_then(|s| s.app_armor_profile.as_ref()).filter(|p| forbidden(&p.type_)) {
            out.push(Violation::new(
                "forbidden AppArmor profile",
                c.field("appArmorProfile.type"),
                format!("container {:?} must not set securityContext.appArmorProfile.type to {:?}", c.name, p.type_),
            ));
        }
    }
}

/// What of `options` is forbidden: `(field, value)`.
fn bad_se_linux(options: &SELinuxOptions) -> Vec<(&'static str, String)> {
    let mut bad = Vec::new();
    if let Some(t) = options.type_.as_deref().filter(|t| !SELINUX_TYPES.contains(t)) {
        bad.push(("type", t.to_string()));
    }
    for (field, value) in [("user", &options.user), ("role", &options.role)] {
        if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
            bad.push((field, v.to_string()));
        }
    }
    bad
}

fn se_linux(spec: &PodSpec, containers: &[ContainerView<'_>], out: &mut Vec<Violation>) {
    if let Some(options) = spec.security_context.as_ref().and_then(|s| s.se_linux_options.as_ref()) {
        for (field, value) in bad_se_linux(options) {
            out.push(Violation::new(
                "seLinuxOptions",
                pod_field("seLinuxOptions").child(field),
                format!("pod set forbidden securityContext.seLinuxOptions: {field} {value:?}"),
            ));
        }
    }
    for c in containers {
        if let Some(options) = c.security_context.and_then(|s| s.se_linux_options.as_ref()) {
            for (field, value) in bad_se_linux(options) {
                out.push(Violation::new(
                    "seLinuxOptions",
                    c.field("seLinuxOptions").child(field),
                    format!("container {:?} set forbidden securityContext.seLinuxOptions: {field} {value:?}", c.name),
                ));
            }
        }
    }
}

/// Baseline forbids only `Unconfined`.
fn seccomp_unconfined(spec: &PodSpec, containers: &[ContainerView<'_>], out: &mut Vec<Violation>) {
    let pod = spec.security_context.as_ref().and_then(|s| s.seccomp_profile.as_ref());
    if pod.is_some_and(|p| p.type_ == "Unconfined") {
        out.push(Violation::new(
            "seccompProfile",
            pod_field("seccompProfile.type"),
            "pod must not set securityContext.seccompProfile.type to \"Unconfined\"",
        ));
    }
    for c in containers {
        if c.security_context.and_then(|s| s.seccomp_profile.as_ref()).is_some_and(|p| p.type_ == "Unconfined") {
            out.push(Violation::new(
                "seccompProfile",
                c.field("seccompProfile.type"),
                format!("container {:?} must not set securityContext.seccompProfile.type to \"Unconfined\"", c.name),
            ));
        }
    }
}

/// `unconfined` in the legacy seccomp annotations (which the API server still copies into the
/// fields when those are unset), at every level but privileged.
fn seccomp_annotations(meta: &ObjectMeta, out: &mut Vec<Violation>) {
    for (key, value) in meta.annotations.iter().flatten() {
        let legacy = key == SECCOMP_POD_ANNOTATION || key.starts_with(SECCOMP_CONTAINER_ANNOTATION);
        if legacy && value == "unconfined" {
            out.push(Violation::new(
                "seccompProfile",
                Path::new("metadata").child("annotations").key(key),
                format!("{key}={value:?}"),
            ));
        }
    }
}

fn sysctls(spec: &PodSpec, out: &mut Vec<Violation>) {
    let sysctls = spec.security_context.as_ref().and_then(|s| s.sysctls.as_deref()).unwrap_or_default();
    for (i, s) in sysctls.iter().enumerate() {
        if !SAFE_SYSCTLS.contains(&s.name.as_str()) {
            out.push(Violation::new("forbidden sysctls", pod_field("sysctls").index(i).child("name"), s.name.clone()));
        }
    }
}
