//! Unit tests of each `setReduceConfig` branch (filled in below).
