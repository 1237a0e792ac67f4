#![allow(dead_code)] // each test binary uses a different part of these helpers

pub mod cli;
pub mod matrices;
pub mod outcomes;
