//! The Admission that the property tests (`tests/property.rs`) and the fuzz benchmark
//! (`benches/fuzz_throughput.rs`) check: the example CloudProfile and ControllerRegistrations
//! and a Shoot on `seed-a` to look up, at the fixtures' fixed time.

use admission::review::{Admission, RulesConfig, StaticLookup};
use std::sync::Arc;

pub fn admission() -> Admission {
    let mut shoot = admission::fixtures::shoot();
    shoot.spec.seed_name = Some("seed-a".into());
    let lookup = StaticLookup {
        cloud_profiles: vec![Arc::new(admission::fixtures::cloud_profile())],
        shoots: vec![Arc::new(shoot)],
        controller_registrations: admission::fixtures::controller_registrations().into_iter().map(Arc::new).collect(),
        ..Default::default()
    };
    Admission::new(Arc::new(lookup), RulesConfig::default()).with_clock(admission::fixtures::now)
}
