//! The status document of a Shoot: what `lastOperation` says as an operation starts, progresses
//! and ends ([`last_operation`]), the health conditions with their `Progressing` step
//! ([`conditions`]).

pub mod conditions;
pub mod last_operation;
