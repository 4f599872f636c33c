//! What one operation on one shoot works with: the context (clients, configuration, the shoot,
//! its seed and what earlier tasks found), the values derived from the shoot, the garden objects
//! it references, clients for its API server, and the I/O helpers flow tasks share (apply,
//! wait, deploy an extension object).

pub mod apply;
pub mod audit_policy;
pub mod clients;
pub mod context;
pub mod readiness;
pub mod references;
pub mod values;
