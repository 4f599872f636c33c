//! The shoot's health: the checks that compute its conditions ([`checks`]) and the care
//! controller that runs them on its own period between reconciles ([`care`]).

pub mod care;
pub mod checks;
