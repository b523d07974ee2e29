//! The lists the host has listed of one server (its resources, resource templates and
//! prompts) as its slot holds them, and until when each is fresh; how they are listed and
//! listed again is [`super::catalog`].

use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// One of the lists held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum List {
    Resources,
    Templates,
    Prompts,
}

impl List {
    pub(super) const ALL: [List; 3] = [List::Resources, List::Templates, List::Prompts];

    pub(super) fn at(self) -> usize {
        self as usize
    }

    pub(crate) fn method(self) -> &'static str {
        match self {
            List::Resources => "resources/list",
            List::Templates => "resources/templates/list",
            List::Prompts => "prompts/list",
        }
    }

    /// The item member a list is keyed by.
    pub(crate) fn key(self) -> &'static str {
        match self {
            List::Resources => "uri",
            List::Templates => "uriTemplate",
            List::Prompts => "name",
        }
    }

    /// The capability a server declares it with.
    pub(super) fn capability(self) -> &'static str {
        match self {
            List::Resources | List::Templates => "/resources",
            List::Prompts => "/prompts",
        }
    }
}

/// Which lists a change notice names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `notifications/resources/list_changed`: resources and templates.
    Resources,
    Prompts,
    All,
}

impl Kind {
    pub(super) fn lists(self) -> &'static [List] {
        match self {
            Kind::Resources => &[List::Resources, List::Templates],
            Kind::Prompts => &[List::Prompts],
            Kind::All => &List::ALL,
        }
    }
}

/// Until when a held list is fresh.
#[derive(Clone, Copy, Debug)]
pub(super) enum Until {
    /// Until the server says it changed.
    Changed,
    At(Instant),
    /// Not cached: listed again whenever asked for (kept for diffs and failures).
    Now,
}

pub(super) struct Held {
    pub(super) items: Arc<Vec<Value>>,
    pub(super) until: Until,
}

/// One server's held lists (its slot's lock).
#[derive(Default)]
pub(crate) struct Catalog {
    pub(super) held: [Option<Held>; 3],
    /// Why the last walk of each list failed, for the status.
    pub(super) errors: [Option<String>; 3],
    /// A thread lists again; lists changed meanwhile (listed once more after it).
    pub(super) relisting: bool,
    /// Counts the change notices of each list: a walk during which one came is not fresh.
    pub(super) generation: [u64; 3],
    pub(super) pending: [bool; 3],
}

impl Catalog {
    pub(super) fn fresh(&self, l: List, now: Instant) -> Option<Arc<Vec<Value>>> {
        let h = self.held[l.at()].as_ref()?;
        match h.until {
            Until::Changed => Some(h.items.clone()),
            Until::At(t) if t > now => Some(h.items.clone()),
            _ => None,
        }
    }

    pub(super) fn held(&self, l: List) -> Option<Arc<Vec<Value>>> {
        self.held[l.at()].as_ref().map(|h| h.items.clone())
    }

    /// Whether any list is held (the host listed this server).
    pub(crate) fn has_any(&self) -> bool {
        self.held.iter().any(Option::is_some)
    }

    /// Everything held becomes stale (a change notice, a new session).
    pub(super) fn stale(&mut self, lists: &[List]) {
        for l in lists {
            if let Some(h) = &mut self.held[l.at()] {
                h.until = Until::Now;
            }
        }
    }

    /// The status's `listErrors`: `{"<method>": "<why>"}` for each list whose last walk failed.
    pub(crate) fn errors(&self) -> Option<Value> {
        let mut m = serde_json::Map::new();
        for l in List::ALL {
            if let Some(e) = &self.errors[l.at()] {
                m.insert(l.method().into(), Value::String(e.clone()));
            }
        }
        (!m.is_empty()).then_some(Value::Object(m))
    }
}
