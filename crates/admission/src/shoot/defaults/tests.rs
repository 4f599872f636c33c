use super::*;
use crate::fixtures;
use api::core::seed::ShootNetworks;

fn ctx(profile: &CloudProfileSpec) -> DefaultingContext<'_> {
    DefaultingContext { profile: Some(profile), seed: None, now: fixtures::now() }
}

#[test]
fn fills_what_gardener_fills() {
    let profile = fixtures::cloud_profile_spec();
    let mut s = fixtures::shoot();
    s.spec.kubernetes.version = "1.20".into();
    default_shoot(&mut s, ctx(&profile));
    let n = s.spec.networking.as_ref().unwrap();
    assert_eq!(n.pods.as_deref(), Some(DEFAULT_POD_CIDR));
    assert_eq!(n.services.as_deref(), Some(DEFAULT_SERVICE_CIDR));
    assert_eq!(n.nodes.as_deref(), Some(DEFAULT_NODE_CIDR));
    assert_eq!(s.spec.purpose, Some(ShootPurpose::Evaluation));
    assert_eq!(s.spec.kubernetes.version, "1.20.2");
    let proxy = s.spec.kubernetes.kube_proxy.as_ref().unwrap();
    assert_eq!((proxy.mode, proxy.enabled), (Some(ProxyMode::IPTables), Some(true)));
    let m = s.spec.maintenance.as_ref().unwrap();
    assert_eq!(
        m.auto_update,
        Some(MaintenanceAutoUpdate { kubernetes_version: true, machine_image_version: Some(true) })
    );
    assert_eq!(m.time_window, Some(maintenance_window("garden-dev/demo")));
    let w = &s.spec.provider.workers[0];
    assert_eq!(
        w.machine.image.as_ref().map(|i| (i.name.as_str(), i.version.as_deref())),
        Some(("local", Some("1.0.0")))
    );
    assert_eq!(
        (w.max_surge.clone(), w.max_unavailable.clone()),
        (Some(IntOrString::Int(1)), Some(IntOrString::Int(0)))
    );
    assert_eq!(w.machine.architecture.as_deref(), Some("amd64"));
    assert!(w.cri.is_some() && w.system_components == Some(WorkerSystemComponents { allow: true }));
}

#[test]
fn keeps_what_the_user_set_and_is_idempotent() {
    let profile = fixtures::cloud_profile_spec();
    let mut s = fixtures::shoot();
    let n = s.spec.networking.as_mut().unwrap();
    n.pods = Some("10.1.0.0/16".into());
    s.spec.purpose = Some(ShootPurpose::Production);
    s.spec.kubernetes.kube_proxy = Some(KubeProxyConfig { mode: Some(ProxyMode::IPVS), ..Default::default() });
    s.spec.maintenance = Some(Maintenance {
        time_window: Some(MaintenanceTimeWindow { begin: "100000+0000".into(), end: "110000+0000".into() }),
        ..Default::default()
    });
    default_shoot(&mut s, ctx(&profile));
    assert_eq!(s.spec.networking.as_ref().unwrap().pods.as_deref(), Some("10.1.0.0/16"));
    assert_eq!(s.spec.purpose, Some(ShootPurpose::Production));
    assert_eq!(s.spec.kubernetes.kube_proxy.as_ref().unwrap().mode, Some(ProxyMode::IPVS));
    assert_eq!(s.spec.maintenance.as_ref().unwrap().time_window.as_ref().unwrap().begin, "100000+0000");
    let once = s.clone();
    default_shoot(&mut s, ctx(&profile));
    assert_eq!(s, once);
}

#[test]
fn seed_shoot_defaults_win_over_constants() {
    let mut seed = api::core::SeedSpec::default();
    seed.networks.shoot_defaults = Some(ShootNetworks { pods: Some("10.200.0.0/16".into()), services: None });
    let mut s = fixtures::shoot();
    default_shoot(&mut s, DefaultingContext { profile: None, seed: Some(&seed), now: fixtures::now() });
    let n = s.spec.networking.as_ref().unwrap();
    assert_eq!((n.pods.as_deref(), n.services.as_deref()), (Some("10.200.0.0/16"), Some(DEFAULT_SERVICE_CIDR)));
    // Without a profile, nothing is chosen from it.
    assert!(s.spec.provider.workers[0].machine.image.is_none());
}

#[test]
fn maintenance_windows_are_deterministic_and_at_night() {
    let mut begins = std::collections::BTreeSet::new();
    for i in 0..200 {
        let w = maintenance_window(&format!("garden-p/shoot-{i}"));
        assert_eq!(w, maintenance_window(&format!("garden-p/shoot-{i}")));
        let hour: u32 = w.begin[..2].parse().unwrap();
        assert!(hour >= 22 || hour <= 5, "{w:?}");
        let end: u32 = w.end[..2].parse().unwrap();
        assert_eq!(end, (hour + 1) % 24);
        assert!(w.begin.ends_with("0000+0000"));
        begins.insert(hour);
    }
    assert_eq!(begins.len(), 8, "windows spread over every night hour: {begins:?}");
}
