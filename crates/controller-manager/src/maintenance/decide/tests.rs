use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn v(version: &str, expires: Option<&str>, class: Option<VersionClassification>) -> ExpirableVersion {
    ExpirableVersion { version: version.into(), expiration_date: expires.map(|e| Time(ts(e))), classification: class }
}

fn window(begin: &str, end: &str) -> Window {
    Window::parse(&MaintenanceTimeWindow { begin: begin.into(), end: end.into() }).unwrap()
}

#[test]
fn windows_parse_with_offsets_and_wrap_midnight() {
    // 22:00-23:00 at +01:00 is 21:00-22:00 UTC.
    let w = window("220000+0100", "230000+0100");
    assert_eq!(w.elapsed(ts("2026-05-01T21:30:00Z")), Some(1800));
    assert_eq!(w.elapsed(ts("2026-05-01T22:00:00Z")), None);
    assert_eq!(w.until_next(ts("2026-05-01T20:00:00Z")), Duration::from_secs(3600));
    let night = window("230000+0000", "010000+0000");
    assert!(night.elapsed(ts("2026-05-01T00:30:00Z")).is_some());
    assert!(night.elapsed(ts("2026-05-01T23:10:00Z")).is_some());
    assert!(night.elapsed(ts("2026-05-01T12:00:00Z")).is_none());
    for (begin, end, field) in [
        ("25", "230000+0100", "spec.maintenance.timeWindow.begin"),
        ("220000+0100", "236000+0100", "spec.maintenance.timeWindow.end"),
        ("220000*0100", "230000+0100", "spec.maintenance.timeWindow.begin"),
    ] {
        let err = Window::parse(&MaintenanceTimeWindow { begin: begin.into(), end: end.into() }).unwrap_err();
        assert_eq!(err.field, field, "{begin} {end}: {err}");
    }
}

#[test]
fn version_targets() {
    use VersionClassification as C;
    let now = ts("2026-05-01T00:00:00Z");
    let offered = [
        v("1.30.1", Some("2026-04-01T00:00:00Z"), None),
        v("1.30.2", Some("2026-04-01T00:00:00Z"), None),
        v("1.31.1", None, Some(C::Supported)),
        v("1.31.3", None, Some(C::Supported)),
        v("1.31.4", None, Some(C::Preview)),
        v("1.32.0", None, Some(C::Supported)),
    ];
    type Case = (&'static str, bool, Option<&'static str>, &'static str);
    let cases: [Case; 5] = [
        ("1.30.1", false, Some("1.31.3"), "expired: forced update to 1.31.3"),
        ("1.30.1", true, Some("1.31.3"), "expired"),
        ("1.31.1", true, Some("1.31.3"), "auto-updated from 1.31.1 to 1.31.3"),
        ("1.31.1", false, None, ""),
        ("1.32.0", true, None, ""),
    ];
    for (current, auto, want, why) in cases {
        let got = kubernetes_target(&offered, current, auto, now).unwrap();
        assert_eq!(got.as_ref().map(|(v, _)| v.as_str()), want, "{current} auto={auto}");
        if let Some((_, reason)) = got {
            assert!(reason.contains(why), "{reason}");
        }
    }
    let err = kubernetes_target(&offered, "1.29.0", true, now).unwrap_err();
    assert_eq!(err.field, "spec.kubernetes.version");
}

#[test]
fn maintenance_runs_once_per_window_or_when_asked() {
    let offered = [v("1.31.1", None, None), v("1.31.3", None, None)];
    let w = window("220000+0000", "230000+0000");
    let facts = |now: &str, last: Option<&str>, asked: bool| Facts {
        version: "1.31.1",
        offered: &offered,
        auto_update: true,
        pools: vec![],
        auto_update_images: false,
        window: Some(w),
        maintain_requested: asked,
        last_triggered: last.map(ts),
        now: ts(now),
    };
    let d = decide(&facts("2026-05-01T22:10:00Z", None, false)).unwrap();
    assert!(d.run);
    assert_eq!(d.update.map(|u| u.0).as_deref(), Some("1.31.3"));
    assert!(
        !decide(&facts("2026-05-01T22:10:00Z", Some("2026-05-01T22:05:00Z"), false)).unwrap().run,
        "once per window"
    );
    assert!(decide(&facts("2026-05-02T22:10:00Z", Some("2026-05-01T22:05:00Z"), false)).unwrap().run, "next day");
    let outside = decide(&facts("2026-05-01T12:00:00Z", None, false)).unwrap();
    assert!(!outside.run);
    assert_eq!(outside.requeue_after, Some(Duration::from_secs(10 * 3600)));
    assert!(decide(&facts("2026-05-01T12:00:00Z", Some("2026-05-01T11:00:00Z"), true)).unwrap().run, "asked");
}

#[test]
fn machine_image_targets() {
    use VersionClassification as C;
    let now = ts("2026-05-01T00:00:00Z");
    let offered = [
        v("1.0.0", Some("2026-04-01T00:00:00Z"), None),
        v("1.1.0", None, Some(C::Supported)),
        v("2.0.0", None, Some(C::Supported)),
        v("2.1.0", None, Some(C::Preview)),
        v("0.9.0", Some("2027-01-01T00:00:00Z"), None),
    ];
    let pool = |version: &'static str| PoolImage {
        index: 1,
        pool: "pool",
        image: "local",
        version,
        offered: offered.iter().collect(),
    };
    type Case = (&'static str, bool, Option<&'static str>, &'static str);
    let cases: [Case; 6] = [
        // Expired: forced to the newest unexpired non-preview version, auto-update or not.
        (
            "1.0.0",
            false,
            Some("2.0.0"),
            "machine image local 1.0.0 of worker pool pool expired: forced update to 2.0.0",
        ),
        ("1.0.0", true, Some("2.0.0"), "expired"),
        ("1.1.0", true, Some("2.0.0"), "auto-updated from 1.1.0 to 2.0.0"),
        ("1.1.0", false, None, ""),
        // Never onto a preview; nothing newer; not offered (a custom image): left alone.
        ("2.0.0", true, None, ""),
        ("3.0.0", true, None, ""),
    ];
    for (current, auto, want, why) in cases {
        let got = machine_image_target(&pool(current), auto, now);
        assert_eq!(got.as_ref().map(|u| u.to.as_str()), want, "{current} auto={auto}");
        if let Some(update) = got {
            assert_eq!(update.index, 1);
            assert!(update.why.contains(why), "{}", update.why);
        }
    }
}
