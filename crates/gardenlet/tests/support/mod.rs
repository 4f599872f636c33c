//! Test-only stand-ins for what this environment lacks: no kubelet runs pods, no cloud
//! provides load balancers, and no provider extension is installed.

#![allow(dead_code)]

pub mod actuators;
pub mod approver;
pub mod chart;
pub mod shoots;
pub mod simulator;
pub mod standin;
