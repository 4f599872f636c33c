//! The names of a cluster's networks ([`NetworkKind`]) and a set of them ([`NetworkSet`]), as
//! the network filter reports them in a [`super::refusal::DropReason`].

use std::fmt;

/// One of a cluster's networks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NetworkKind {
    Nodes,
    Pods,
    Services,
}

impl NetworkKind {
    const ALL: [NetworkKind; 3] = [Self::Nodes, Self::Pods, Self::Services];

    fn name(self) -> &'static str {
        match self {
            Self::Nodes => "nodes",
            Self::Pods => "pods",
            Self::Services => "services",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Self::Nodes => 1,
            Self::Pods => 2,
            Self::Services => 4,
        }
    }
}

/// A set of [`NetworkKind`]s, shown as "nodes, pods".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NetworkSet(u8);

impl NetworkSet {
    pub fn of(kinds: &[NetworkKind]) -> Self {
        let mut set = Self::default();
        kinds.iter().for_each(|k| set.insert(*k));
        set
    }
    pub fn insert(&mut self, kind: NetworkKind) {
        self.0 |= kind.bit();
    }
    pub fn contains(self, kind: NetworkKind) -> bool {
        self.0 & kind.bit() != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for NetworkSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for kind in NetworkKind::ALL.into_iter().filter(|k| self.contains(*k)) {
            if !first {
                f.write_str(", ")?;
            }
            f.write_str(kind.name())?;
            first = false;
        }
        Ok(())
    }
}
