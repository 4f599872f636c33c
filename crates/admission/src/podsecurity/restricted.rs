//! The `restricted` checks on top of [`super::baseline`] (upstream's `restrictedVolumes`,
//! `allowPrivilegeEscalation`, `runAsNonRoot`, `runAsUser`, `seccompProfile_restricted`,
//! `capabilities_restricted`). Pods with `spec.os.name: windows` are exempt from the Linux-only
//! ones (privilege escalation, seccomp, capabilities), as upstream.

use super::{ContainerView, Violation, containers, is_windows, pod_field};
use crate::field::Path;
use k8s_openapi::api::core::v1::{PodSpec, Volume};

/// The volume types a restricted pod may use.
pub const ALLOWED_VOLUME_TYPES: &[&str] =
    &["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"];

pub(super) fn check(spec: &PodSpec, out: &mut Vec<Violation>) {
    for (i, v) in spec.volumes.iter().flatten().enumerate() {
        let kind = volume_type(v);
        if !ALLOWED_VOLUME_TYPES.contains(&kind) {
            out.push(Violation::new(
                "restricted volume types",
                Path::new("spec").child("volumes").index(i).child(kind),
                format!("volume {:?} uses restricted volume type {kind:?}", v.name),
            ));
        }
    }
    let containers = containers(spec);
    let windows = is_windows(spec);
    if !windows {
        for c in &containers {
            if c.security_context.and_then(|s| s.allow_privilege_escalation) != Some(false) {
                out.push(Violation::new(
                    "allowPrivilegeEscalation != false",
                    c.field("allowPrivilegeEscalation"),
                    format!("container {:?} must set securityContext.allowPrivilegeEscalation=false", c.name),
                ));
            }
        }
    }
    run_as_non_root(spec, &containers, out);
    run_as_user(spec, &containers, out);
    if !windows {
        seccomp(spec, &containers, out);
        for c in &containers {
            capabilities(c, out);
        }
    }
}

/// The name of the volume's source as the API spells it (`hostPath`); `unknown` when none is set.
fn volume_type(v: &Volume) -> &'static str {
    let set = [
        (v.config_map.is_some(), "configMap"),
        (v.csi.is_some(), "csi"),
        (v.downward_api.is_some(), "downwardAPI"),
        (v.empty_dir.is_some(), "emptyDir"),
        (v.ephemeral.is_some(), "ephemeral"),
        (v.persistent_volume_claim.is_some(), "persistentVolumeClaim"),
        (v.projected.is_some(), "projected"),
        (v.secret.is_some(), "secret"),
        (v.host_path.is_some(), "hostPath"),
        (v.aws_elastic_block_store.is_some(), "awsElasticBlockStore"),
        (v.azure_disk.is_some(), "azureDisk"),
        (v.azure_file.is_some(), "azureFile"),
        (v.cephfs.is_some(), "cephfs"),
        (v.cinder.is_some(), "cinder"),
        (v.fc.is_some(), "fc"),
        (v.flex_volume.is_some(), "flexVolume"),
        (v.flocker.is_some(), "flocker"),
        (v.gce_persistent_disk.is_some(), "gcePersistentDisk"),
        (v.git_repo.is_some(), "gitRepo"),
        (v.glusterfs.is_some(), "glusterfs"),
        (v.image.is_some(), "image"),
        (v.iscsi.is_some(), "iscsi"),
        (v.nfs.is_some(), "nfs"),
        (v.photon_persistent_disk.is_some(), "photonPersistentDisk"),
        (v.portworx_volume.is_some(), "portworxVolume"),
        (v.quobyte.is_some(), "quobyte"),
        (v.rbd.is_some(), "rbd"),
        (v.scale_io.is_some(), "scaleIO"),
        (v.storageos.is_some(), "storageos"),
        (v.vsphere_volume.is_some(), "vsphereVolume"),
    ];
    // A volume with no source is an emptyDir (the API server's default).
    if set.iter().all(|(is, _)| !is) {
        return "emptyDir";
    }
    // The first restricted source wins, so a volume that also names an allowed one is refused.
    set.iter().rev().find(|(is, _)| *is).map_or("unknown", |(_, name)| name)
}

/// The pod must set `runAsNonRoot: true`, or every container must; no container may set
/// `false`.
fn run_as_non_root(spec: &PodSpec, containers: &[ContainerView<'_>], out: &mut Vec<Violation>) {
    let pod = spec.security_context.as_ref().and_then(|s| s.run_as_non_root);
    if pod == Some(false) {
        out.push(Violation::new(
            "runAsNonRoot != true",
            pod_field("runAsNonRoot"),
            "pod must not set securityContext.runAsNonRoot=false",
        ));
    }
    for c in containers {
        match c.security_context.and_then(|s| s.run_as_non_root) {
            Some(true) => {}
            Some(false) => out.push(Violation::new(
                "runAsNonRoot != true",
                c.field("runAsNonRoot"),
                format!("container {:?} must not set securityContext.runAsNonRoot=false", c.name),
            )),
            None if pod != Some(true) => out.push(Violation::new(
                "runAsNonRoot != true",
                c.field("runAsNonRoot"),
                format!("pod or container {:?} must set securityContext.runAsNonRoot=true", c.name),
            )),
            None => {}
        }
    }
}

fn run_as_user(spec: &PodSpec, containers: &[ContainerView<'_>], out: &mut Vec<Violation>) {
    if spec.security_context.as_ref().and_then(|s| s.run_as_user) == Some(0) {
        out.push(Violation::new("runAsUser=0", pod_field("runAsUser"), "pod must not set runAsUser=0"));
    }
    for c in containers {
        if c.security_context.and_then(|s| s.run_as_user) == Some(0) {
            out.push(Violation::new(
                "runAsUser=0",
                c.field("runAsUser"),
                format!("container {:?} must not set runAsUser=0", c.name),
            ));
        }
    }
}

fn allowed_seccomp(t: &str) -> bool {
    matches!(t, "RuntimeDefault" | "Localhost")
}

/// The pod's profile must be `RuntimeDefault` or `Localhost`, or every container's must; a set
/// profile of another type is refused wherever it is.
fn seccomp(spec: &PodSpec, containers: &[ContainerView<'_>], out: &mut Vec<Violation>) {
    let pod = spec.security_context.as_ref().and_then(|s| s.seccomp_profile.as_ref());
    if let Some(p) = pod.filter(|p| !allowed_seccomp(&p.type_)) {
        out.push(Violation::new(
            "seccompProfile",
            pod_field("seccompProfile.type"),
            format!("pod must not set securityContext.seccompProfile.type to {:?}", p.type_),
        ));
    }
    let pod_ok = pod.is_some_and(|p| allowed_seccomp(&p.type_));
    for c in containers {
        match c.security_context.and_then(|s| s.seccomp_profile.as_ref()) {
            Some(p) if !allowed_seccomp(&p.type_) => out.push(Violation::new(
                "seccompProfile",
                c.field("seccompProfile.type"),
                format!("container {:?} must not set securityContext.seccompProfile.type to {:?}", c.name, p.type_),
            )),
            None if !pod_ok => out.push(Violation::new(
                "seccompProfile",
                c.field("seccompProfile.type"),
                format!(
                    "pod or container {:?} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                    c.name
                ),
            )),
            _ => {}
        }
    }
}

/// Every container drops `ALL` and adds at most `NET_BIND_SERVICE`.
fn capabilities(c: &ContainerView<'_>, out: &mut Vec<Violation>) {
    let caps = c.security_context.and_then(|s| s.capabilities.as_ref());
    let dropped = caps.and_then(|c| c.drop.as_deref()).unwrap_or_default();
    if !dropped.iter().any(|d| d == "ALL") {
        out.push(Violation::new(
            "unrestricted capabilities",
            c.field("capabilities.drop"),
            format!("container {:?} must set securityContext.capabilities.drop=[\"ALL\"]", c.name),
        ));
    }
    let added = caps.and_then(|c| c.add.as_deref()).unwrap_or_default();
    for (i, cap) in added.iter().enumerate() {
        if cap != "NET_BIND_SERVICE" {
            out.push(Violation::new(
                "unrestricted capabilities",
                c.field("capabilities.add").index(i),
                format!("container {:?} must not include {cap:?} in securityContext.capabilities.add", c.name),
            ));
        }
    }
}
