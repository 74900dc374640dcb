//! Attributes: typed name/value pairs (thesis §3.3.1).
//!
//! An [`AttrKey<T>`] names an attribute and fixes its value type at compile
//! time, so `attrs.get(&MAX_SIZE)` is a `usize` without casts. A key also has
//! a [`Scope`]: a *limited* key is dropped by a module that does not declare
//! it in [`ModuleSpec::understands`](crate::graph::spec::ModuleSpec) when a
//! path is routed through that module; a *pervasive* key passes through.
//!
//! Sets are small (a handful of invariants), so [`Attrs`] is a vector searched
//! linearly: cheaper than hashing at these sizes, and ordered for display.
//!
//! ```
//! use pathstack_core::attrs::{Attrs, keys};
//! let mut a = Attrs::new();
//! a.insert(&keys::MAX_SIZE, 1500);
//! a.insert(&keys::PASSIVE_OPEN, true);
//! assert_eq!(a.get(&keys::MAX_SIZE), Some(&1500));
//! a.retain_understood(&["PASSIVE_OPEN"]); // MAX_SIZE is limited: dropped
//! assert!(!a.contains(&keys::MAX_SIZE));
//! assert!(a.contains(&keys::PASSIVE_OPEN));
//! ```

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;

pub mod keys;

/// How far an attribute travels along a path being created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Dropped by a module that does not understand it.
    Limited,
    /// Passed through every module.
    Pervasive,
}

/// The name of an attribute with value type `T`.
pub struct AttrKey<T> {
    name: &'static str,
    scope: Scope,
    _value: PhantomData<fn() -> T>,
}

impl<T> AttrKey<T> {
    /// A key that modules which do not understand it drop.
    pub const fn limited(name: &'static str) -> Self {
        AttrKey {
            name,
            scope: Scope::Limited,
            _value: PhantomData,
        }
    }
    /// A key that passes through every module.
    pub const fn pervasive(name: &'static str) -> Self {
        AttrKey {
            name,
            scope: Scope::Pervasive,
            _value: PhantomData,
        }
    }
    /// The key's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }
    /// The key's scope.
    pub const fn scope(&self) -> Scope {
        self.scope
    }
}

impl<T> fmt::Debug for AttrKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({:?})", self.name, self.scope)
    }
}

/// A value that can live in an attribute set.
pub trait AttrValue: Any + Send + Sync + fmt::Debug {
    /// A boxed copy of the value.
    fn clone_box(&self) -> Box<dyn AttrValue>;
}

impl<T: Any + Send + Sync + fmt::Debug + Clone> AttrValue for T {
    fn clone_box(&self) -> Box<dyn AttrValue> {
        Box::new(self.clone())
    }
}

struct Entry {
    name: &'static str,
    scope: Scope,
    value: Box<dyn AttrValue>,
}

/// A set of attributes, at most one per key name.
#[derive(Default)]
pub struct Attrs {
    entries: Vec<Entry>,
}

impl Clone for Attrs {
    fn clone(&self) -> Self {
        Attrs {
            entries: self
                .entries
                .iter()
                .map(|e| Entry {
                    name: e.name,
                    scope: e.scope,
                    value: e.value.clone_box(),
                })
                .collect(),
        }
    }
}

impl Attrs {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.name == name)
    }

    /// Sets `key` to `value`, returning the previous value if it had this type.
    pub fn insert<T: AttrValue>(&mut self, key: &AttrKey<T>, value: T) -> Option<T> {
        let entry = Entry {
            name: key.name,
            scope: key.scope,
            value: Box::new(value),
        };
        match self.position(key.name) {
            Some(i) => {
                let old = std::mem::replace(&mut self.entries[i], entry);
                (old.value as Box<dyn Any>).downcast::<T>().ok().map(|b| *b)
            }
            None => {
                self.entries.push(entry);
                None
            }
        }
    }

    /// Builder form of [`Attrs::insert`].
    pub fn with<T: AttrValue>(mut self, key: &AttrKey<T>, value: T) -> Self {
        self.insert(key, value);
        self
    }

    /// The value of `key`, if present with type `T`.
    pub fn get<T: AttrValue>(&self, key: &AttrKey<T>) -> Option<&T> {
        let e = &self.entries[self.position(key.name)?];
        (&*e.value as &dyn Any).downcast_ref::<T>()
    }

    /// The value of `key`, writable.
    pub fn get_mut<T: AttrValue>(&mut self, key: &AttrKey<T>) -> Option<&mut T> {
        let i = self.position(key.name)?;
        (&mut *self.entries[i].value as &mut dyn Any).downcast_mut::<T>()
    }

    /// Removes `key` and returns its value if it had type `T`.
    pub fn remove<T: AttrValue>(&mut self, key: &AttrKey<T>) -> Option<T> {
        let i = self.position(key.name)?;
        let e = self.entries.remove(i);
        (e.value as Box<dyn Any>).downcast::<T>().ok().map(|b| *b)
    }

    /// Whether an attribute called like `key` is present (whatever its type).
    pub fn contains<T>(&self, key: &AttrKey<T>) -> bool {
        self.position(key.name).is_some()
    }

    /// Number of attributes.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The attributes as (name, scope, value) in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, Scope, &dyn fmt::Debug)> + '_ {
        self.entries
            .iter()
            .map(|e| (e.name, e.scope, &*e.value as &dyn fmt::Debug))
    }

    /// Gives back the room kept for more entries: a path's attributes
    /// are set when it is made and then mostly only read, and a host
    /// with a million connections holds a million sets (issue 28 item 4).
    /// The address stacks of `PARTICIPANTS`, which routing consumes part
    /// by part (each module pops its own), are given back their room too:
    /// on an established connection both are empty, and their two
    /// allocations were 64 octets of an idle end (issue 28 item 4).
    pub fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
        if let Some(p) = self.get_mut(&keys::PARTICIPANTS) {
            p.local.shrink_to_fit();
            p.remote.shrink_to_fit();
        }
    }

    /// Drops every limited attribute whose name is not in `understood`
    /// (what happens when a path is routed through a module).
    pub fn retain_understood(&mut self, understood: &[&str]) {
        self.entries
            .retain(|e| e.scope == Scope::Pervasive || understood.contains(&e.name));
    }
}

impl fmt::Debug for Attrs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|e| (e.name, &e.value)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NUM: AttrKey<u32> = AttrKey::limited("NUM");
    const NUM_AS_STR: AttrKey<String> = AttrKey::limited("NUM");
    const NAME: AttrKey<String> = AttrKey::pervasive("NAME");

    #[test]
    fn typed_insert_get_remove() {
        let mut a = Attrs::new();
        assert_eq!(a.insert(&NUM, 1), None);
        assert_eq!(a.insert(&NUM, 2), Some(1));
        *a.get_mut(&NUM).unwrap() += 1;
        assert_eq!(a.get(&NUM), Some(&3));
        // Same name, other type: present, but not readable as that type.
        assert!(a.contains(&NUM_AS_STR));
        assert_eq!(a.get(&NUM_AS_STR), None);
        assert_eq!(a.remove(&NUM), Some(3));
        assert!(a.is_empty());
    }

    #[test]
    fn clone_is_deep_and_iter_ordered() {
        let a = Attrs::new().with(&NAME, "x".to_string()).with(&NUM, 7);
        let mut b = a.clone();
        b.get_mut(&NAME).unwrap().push('y');
        assert_eq!(a.get(&NAME).unwrap(), "x");
        let names: Vec<_> = b.iter().map(|(n, _, _)| n).collect();
        assert_eq!(names, ["NAME", "NUM"]);
    }

    #[test]
    fn limited_dropped_pervasive_kept() {
        let mut a = Attrs::new().with(&NAME, "p".into()).with(&NUM, 1);
        a.retain_understood(&["NUM"]);
        assert_eq!(a.len(), 2);
        a.retain_understood(&[]);
        assert!(a.contains(&NAME) && !a.contains(&NUM));
    }

    /// Routing pops every part of `PARTICIPANTS`; the emptied stacks
    /// keep no room once the set is shrunk (issue 28 item 4).
    #[test]
    fn shrink_gives_back_consumed_participants() {
        use keys::{AddrPart, Participants, PARTICIPANTS};
        let mut a = Attrs::new().with(
            &PARTICIPANTS,
            Participants {
                local: vec![AddrPart::Ipv4([10, 0, 0, 1]), AddrPart::Port(7)],
                remote: vec![AddrPart::Ipv4([10, 0, 0, 2]), AddrPart::Port(9)],
            },
        );
        let p = a.get_mut(&PARTICIPANTS).unwrap();
        p.local.clear();
        p.remote.pop();
        a.shrink_to_fit();
        let p = a.get(&PARTICIPANTS).unwrap();
        assert_eq!(p.local.capacity(), 0);
        assert_eq!(p.remote.capacity(), 1);
        assert_eq!(p.remote, [AddrPart::Ipv4([10, 0, 0, 2])]);
    }
}
