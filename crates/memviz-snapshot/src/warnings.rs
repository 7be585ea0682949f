//! Aggregated warnings: the same kind of problem is reported once, with a count.

use rustc_hash::FxHashMap;

#[derive(Default, Debug)]
pub struct Warnings {
    index: FxHashMap<String, usize>,
    list: Vec<(String, u64)>,
}

impl Warnings {
    /// Record a warning of kind `key`; `msg` is only built the first time that kind is seen.
    pub fn warn(&mut self, key: &str, msg: impl FnOnce() -> String) {
        if let Some(&i) = self.index.get(key) {
            if let Some(w) = self.list.get_mut(i) {
                w.1 += 1;
            }
            return;
        }
        self.index.insert(key.to_string(), self.list.len());
        self.list.push((msg(), 1));
    }

    pub fn into_strings(self) -> Vec<String> {
        self.list
            .into_iter()
            .map(|(m, n)| if n > 1 { format!("{m} ({n} times)") } else { m })
            .collect()
    }
}
