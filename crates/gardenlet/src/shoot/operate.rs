//! One operation on one shoot from start to end, as the controller dispatches it: prepare the
//! Shoot (finalizer, operation annotation), build the operation's context, record the start,
//! run the flow with coalesced progress writes, and record the outcome. Every write to a Shoot
//! of an operation goes through the writers here, guarded by ownership where a migration or a
//! takeover could race (see `ShootController::patch_status_as_owner`).
//!
//! | module | what |
//! |---|---|
//! | `writes` | the status and metadata writers, the owner-guarded one among them |
//! | `run` | an operation's context, and its flow with coalesced progress writes |
//! | `reconcile` | reconcile, hibernate, take over: from preparing the Shoot to the outcome |
//! | `rotation` | which credential rotation a reconcile begins, and its second phase |
//! | `delete` | deletion and forced deletion |
//! | `migrate` | migration away from this seed and the hand-over |

mod delete;
mod migrate;
mod reconcile;
mod rotation;
mod run;
mod writes;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

fn now() -> Time {
    Time(Timestamp::now())
}
