//! The names of snapshots in a backup store, in etcd-backup-restore's layout: `Full-<start>-<end>-<unix>`
//! for a full snapshot (etcd's own snapshot format, `.db`), `Incr-<start>-<end>-<unix>` for a
//! delta snapshot (the events of revisions `start..=end`, `.json`). Revisions are zero-padded to
//! eight digits (more when larger), so that a directory listing sorts them. The suffixes tell the
//! formats apart; everything else in the directory (the migration's final snapshot, scratch
//! files) is not a snapshot of the chain.

use std::fmt;

/// Full snapshot or delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Full,
    Incr,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Full => "Full",
            Kind::Incr => "Incr",
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            Kind::Full => ".db",
            Kind::Incr => ".json",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One snapshot of a store, as its name describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Snapshot {
    pub kind: Kind,
    /// First revision the snapshot covers (0 for a full snapshot: everything up to `end`).
    pub start: i64,
    /// Last revision it covers. For a full snapshot, the revision etcd reported just before it
    /// was taken: the snapshot holds at least this revision.
    pub end: i64,
    /// When it was stored (seconds since the epoch).
    pub unix: i64,
}

impl Snapshot {
    pub fn full(end: i64, unix: i64) -> Self {
        Self { kind: Kind::Full, start: 0, end, unix }
    }

    pub fn incr(start: i64, end: i64, unix: i64) -> Self {
        Self { kind: Kind::Incr, start, end, unix }
    }

    /// The file name, e.g. `Full-00000000-00000042-1764300000.db`.
    pub fn file_name(&self) -> String {
        format!("{}-{:08}-{:08}-{}{}", self.kind, self.start, self.end, self.unix, self.kind.suffix())
    }

    /// The snapshot a file name describes; `None` for any other file.
    pub fn parse(name: &str) -> Option<Self> {
        let (kind, rest) = if let Some(rest) = name.strip_prefix("Full-") {
            (Kind::Full, rest.strip_suffix(Kind::Full.suffix())?)
        } else if let Some(rest) = name.strip_prefix("Incr-") {
            (Kind::Incr, rest.strip_suffix(Kind::Incr.suffix())?)
        } else {
            return None;
        };
        let mut parts = rest.split('-');
        let mut number = || -> Option<i64> {
            let part = parts.next()?;
            (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit())).then(|| part.parse().ok())?
        };
        let (start, end, unix) = (number()?, number()?, number()?);
        if parts.next().is_some() || start > end || (kind == Kind::Incr && start == 0) {
            return None;
        }
        Some(Self { kind, start, end, unix })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort_by_revision() {
        for s in
            [Snapshot::full(42, 1_764_300_000), Snapshot::incr(43, 120, 1_764_300_020), Snapshot::full(123_456_789, 1)]
        {
            assert_eq!(Snapshot::parse(&s.file_name()), Some(s), "{}", s.file_name());
        }
        assert_eq!(Snapshot::full(42, 7).file_name(), "Full-00000000-00000042-7.db");
        assert!(Snapshot::incr(9, 10, 1).file_name() < Snapshot::incr(10, 11, 1).file_name());
    }

    #[test]
    fn other_files_are_not_snapshots() {
        for name in [
            "final-snapshot.db",
            ".Full-00000000-00000042-7.db.partial",
            "Full-00000000-00000042-7",
            "Full-00000000-00000042-7.json",
            "Incr-00000000-00000042-7.json",
            "Incr-00000050-00000042-7.json",
            "Full-0-x-7.db",
            "Full-0-1-2-3.db",
            "Full--1-2.db",
            "Full-+1-2-3.db",
        ] {
            assert_eq!(Snapshot::parse(name), None, "{name}");
        }
    }
}
