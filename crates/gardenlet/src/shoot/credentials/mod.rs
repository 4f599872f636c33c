//! The shoot's credentials: its control-plane secrets (planned by `pki`, persisted to the
//! ShootState before they reach the seed), their rotation, the token Secrets of a
//! service-account key rotation inside the shoot, and what is published about them in the
//! shoot's project namespace (CA bundle, client CA, SSH key pairs).

pub mod garden_ca;
pub mod garden_ssh;
pub mod rotation;
pub mod secrets;
pub mod service_account_tokens;
