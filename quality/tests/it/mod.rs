//! The cases, one concern per module; `sources` makes the samples they share.

mod ent;
mod false_failures;
mod properties;
mod rngtest;
mod sources;
mod verdicts;
