//! This instance's fingerprint of each list: what a listener on another version compares with
//! to learn that a deployment changed the list.

use std::collections::HashMap;
use std::sync::Mutex;

use super::ListKind;

/// The fingerprints this instance knows, one per list, once published.
#[derive(Debug, Default)]
pub(crate) struct Fingerprints(Mutex<HashMap<ListKind, String>>);

impl Fingerprints {
    /// The fingerprint of a full list: 12 bytes of the SHA-256 of its JSON, in hex.
    pub(crate) fn of<T: serde::Serialize>(items: &[T]) -> Option<String> {
        let bytes = serde_json::to_vec(items).ok()?;
        let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
        Some(
            digest.as_ref()[..12]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }

    /// Remembers the fingerprint of `list`; returns whether it is new.
    pub(crate) fn set(&self, list: ListKind, fingerprint: &str) -> bool {
        let mut known = self.0.lock().expect("fingerprint lock");
        if known.get(&list).map(String::as_str) == Some(fingerprint) {
            return false;
        }
        known.insert(list, fingerprint.to_owned());
        true
    }

    /// Forgets a fingerprint whose publication failed, so the next list request tries again.
    pub(crate) fn forget(&self, list: ListKind) {
        self.0.lock().expect("fingerprint lock").remove(&list);
    }

    /// Whether the fingerprint of `list` is known.
    pub(crate) fn knows(&self, list: ListKind) -> bool {
        self.0.lock().expect("fingerprint lock").contains_key(&list)
    }

    /// The fingerprint of `list`, once published.
    pub(crate) fn get(&self, list: ListKind) -> Option<String> {
        self.0.lock().expect("fingerprint lock").get(&list).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_is_new_once_and_its_list_tells_it_apart() {
        let known = Fingerprints::default();
        let a = Fingerprints::of(&["a"]).unwrap();
        assert_eq!(a.len(), 24);
        assert_ne!(Some(&a), Fingerprints::of(&["b"]).as_ref());
        assert!(known.set(ListKind::Tools, &a));
        assert!(!known.set(ListKind::Tools, &a));
        assert!(!known.knows(ListKind::Prompts));
        assert_eq!(known.get(ListKind::Tools), Some(a));
        known.forget(ListKind::Tools);
        assert!(!known.knows(ListKind::Tools));
    }
}
