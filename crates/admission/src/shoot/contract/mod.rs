//! The Shoot contract: the fate of every field of a Shoot's `spec`. A field either changes the
//! running cluster as Gardener documents ([`Fate::Honoured`]), or admission refuses it with the
//! reason ([`Fate::Refused`]); some are accepted only with the values that state what the system
//! does anyway ([`Fate::OnlyAs`]). Nothing is stored and ignored.
//!
//! [`FIELDS`] is the one table. [`validate`] applies it to a Shoot: every value the user set is
//! looked up by its path, and a set value whose entry refuses it is reported, naming the field and
//! the reason. On an update only values that changed are checked, so a shoot created before a
//! field was refused can still be updated. A value at a path the table does not know (a field of
//! a newer API version, kept by the API types as unmodelled) is refused too.
//!
//! `docs/shoot-fields.md` is [`markdown`] of this table; tests keep it current, check that every
//! field of the Shoot CRD's schema has an entry, and that every test an entry names exists.
//! Value rules that depend on more than presence (a version, another field) live in the modules
//! named in an entry's text and are applied next to this one.
//!
//! The table is kept in one file per concern ([`placement`], [`networking`], [`extensions`],
//! [`operations`], [`kubernetes`], [`kubelet`], [`workers`]), each a list of sections; [`FIELDS`]
//! joins the sections in the order of the fields' names. [`validate`] is in `check.rs`,
//! [`markdown`] in `page.rs`.

mod check;
pub mod extensions;
pub mod kubelet;
pub mod kubernetes;
pub mod networking;
pub mod operations;
mod page;
pub mod placement;
pub mod workers;

pub use check::validate;
pub use page::markdown;

/// What the system does with a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// The field changes the running cluster: `how` says what it changes, `proof` names the test
    /// that shows it.
    Honoured { how: &'static str, proof: &'static str },
    /// Admission refuses any value: `why` says why.
    Refused { why: &'static str },
    /// Accepted only with one of `values` (JSON), which state what the system does anyway
    /// (`how`, proven by `proof`); any other value is refused with `why`.
    OnlyAs { values: &'static [&'static str], how: &'static str, proof: &'static str, why: &'static str },
}

/// One row of the table: a field path and its fate. The path uses `.` between fields and `[]` for
/// the items of a list (`spec.provider.workers[].name`); an entry covers the field and everything
/// below it (a map such as `labels`, an opaque `providerConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub path: &'static str,
    pub fate: Fate,
}

const fn honoured(path: &'static str, how: &'static str, proof: &'static str) -> Field {
    Field { path, fate: Fate::Honoured { how, proof } }
}

const fn refused(path: &'static str, why: &'static str) -> Field {
    Field { path, fate: Fate::Refused { why } }
}

const fn only_as(
    path: &'static str,
    values: &'static [&'static str],
    how: &'static str,
    proof: &'static str,
    why: &'static str,
) -> Field {
    Field { path, fate: Fate::OnlyAs { values, how, proof, why } }
}

const NO_AUTOSCALER: &str = "no cluster-autoscaler runs in this system's shoots; a pool runs `minimum` machines";

/// The sections of the table, in the order of their fields' names.
const SECTIONS: &[&[Field]] = &[
    extensions::ADDONS,
    placement::PLACEMENT,
    placement::CONTROL_PLANE,
    networking::DNS,
    extensions::EXTENSIONS,
    operations::HIBERNATION,
    kubernetes::KUBERNETES,
    kubernetes::KUBE_APISERVER,
    kubernetes::KUBE_COMPONENTS,
    kubelet::KUBELET,
    operations::MAINTENANCE,
    operations::MONITORING,
    networking::NETWORKING,
    workers::PROVIDER,
    extensions::RESOURCES,
    networking::SYSTEM_COMPONENTS,
];

const COUNT: usize = {
    let (mut n, mut i) = (0, 0);
    while i < SECTIONS.len() {
        n += SECTIONS[i].len();
        i += 1;
    }
    n
};

/// [`SECTIONS`] as one array, joined at compile time.
const JOINED: [Field; COUNT] = {
    let mut out = [refused("", ""); COUNT];
    let (mut k, mut i) = (0, 0);
    while i < SECTIONS.len() {
        let mut j = 0;
        while j < SECTIONS[i].len() {
            out[k] = SECTIONS[i][j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    out
};

/// Every field of a Shoot's spec and its fate.
pub const FIELDS: &[Field] = &JOINED;

/// The entry that decides a field: the longest entry path that is `pattern` or one of its
/// ancestors.
pub fn entry_for(pattern: &str) -> Option<&'static Field> {
    FIELDS.iter().filter(|f| covers(f.path, pattern)).max_by_key(|f| f.path.len())
}

fn covers(entry: &str, pattern: &str) -> bool {
    pattern == entry || pattern.strip_prefix(entry).is_some_and(|rest| rest.starts_with('.') || rest.starts_with("[]"))
}

#[cfg(test)]
mod tests;
