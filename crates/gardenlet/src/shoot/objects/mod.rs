//! Pure builders of the objects gardenlet creates for a shoot: the extension objects in its seed
//! namespace ([`extensions`], with each pool's kubelet configuration from [`kubelet`]) and the
//! system resources in the shoot's own API
//! ([`system_resources`], with the function that applies them).

pub mod extensions;
pub mod kubelet;
pub mod system_resources;
