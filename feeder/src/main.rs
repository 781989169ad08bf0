//! `entropy-feeder` (to be written).

fn main() {}
