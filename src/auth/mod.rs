//! Who is calling: the verified principal handlers see.

mod principal;

pub use principal::Principal;
