//! A corpus's quads as one set: the one place that decides which chunk
//! answers a quad several chunks hold.
//!
//! A SPARQL dataset is a set of quads, so a quad two chunks hold answers
//! once: the first chunk in the corpus's order shows it, and a later chunk's
//! copy is dropped. Knowing that a later chunk's row is a copy costs a
//! lookup in every earlier chunk, so the lookups are made only between
//! chunks that are not already shown to be disjoint. The proofs use what
//! opening a chunk reads anyway, never a row:
//!
//! 1. **Graphs**: two chunks can only share quads in the graphs both name
//!    (their graph dictionaries and the graphs their logs add to). None in
//!    common (a corpus split by graph) shows them disjoint; otherwise only
//!    rows in the shared graphs need a look (chunks of named graphs that
//!    each hold a few default-graph quads share the default graph alone);
//! 2. **Subject ranges apart**: the first and last subject of each subject
//!    dictionary, widened by the subjects the logs add, do not overlap (a
//!    corpus split by subject range, or by source when sources mint their
//!    own IRIs).
//!
//! Rows outside every shared graph cost nothing more than the bag did, and
//! counts summed over chunks stay exact for patterns outside them, so the
//! sidecar shortcuts keep working there. A row in a shared graph is looked
//! up once per distinct subject in each earlier chunk that may hold it
//! ([`Seen`]); sums over chunks for patterns that reach a shared graph are
//! not exact, and the callers that sum ([`crate::sparql::dataset`])
//! evaluate instead. `corpus export` writes the same proof into its views
//! (`corpus::views`), so SQL over the export answers the same set.
//!
//! The range proof compares tokens as stored. Producers write an IRI or a
//! blank node label one way (`token_variants` differ only inside literals),
//! so a subject's token is the same in every chunk.

use std::collections::{BTreeSet, HashSet};

use crate::format::term::DEFAULT_GRAPH;
use crate::store::StoreError;
use crate::view::overlay::canonical_token;
use crate::view::terms::Tok;
use crate::view::{Graphs, View, ViewQuad};

/// Graph dictionaries larger than this are not listed for the graph proof
/// (a chunk with a graph per quad): the range proof may still apply.
const MAX_GRAPHS_LISTED: usize = 100_000;

/// What one chunk's files say about which quads it may hold.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// Canonical graph tokens (`DEFAULT` for the default graph); `None`
    /// when the graph dictionary is missing or too large to list.
    graphs: Option<BTreeSet<String>>,
    /// First and last subject token; `None` when the chunk can hold none.
    subjects: Option<(Vec<u8>, Vec<u8>)>,
    /// The subject dictionary is missing: nothing is known of the range.
    subjects_unknown: bool,
}

impl Facts {
    /// The facts of one chunk's view: its dictionaries' ends and names, and
    /// what its log adds.
    pub fn of(view: &View<'_>) -> Result<Facts, StoreError> {
        let mut facts = Facts::default();
        let sidecars = &view.store.sidecars;
        if let Some(dict) = sidecars.dict(3).filter(|d| d.len() <= MAX_GRAPHS_LISTED) {
            let mut graphs = BTreeSet::new();
            for token in dict.tokens() {
                let token = token?;
                graphs
                    .insert(canonical_token(token).unwrap_or_else(|| String::from_utf8_lossy(token).into()));
            }
            facts.graphs = Some(graphs);
        } else if view.store.base.num_columns() == 3 {
            // A triples-only base holds the default graph alone.
            facts.graphs = Some(BTreeSet::from([DEFAULT_GRAPH.to_owned()]));
        }
        match sidecars.dict(0) {
            Some(dict) if !dict.is_empty() => {
                facts.subjects = Some((dict.token(0)?.to_vec(), dict.token(dict.len() as u32 - 1)?.to_vec()));
            }
            Some(_) => {}
            None => facts.subjects_unknown = view.store.base.num_rows() > 0,
        }
        for (gkey, delta) in &view.overlay.graphs {
            if delta.added.is_empty() {
                continue;
            }
            if let Some(graphs) = facts.graphs.as_mut() {
                graphs.insert(gkey.clone());
            }
            for key in &delta.added {
                facts.widen(key[0].as_bytes());
            }
        }
        Ok(facts)
    }

    fn widen(&mut self, subject: &[u8]) {
        match &mut self.subjects {
            None => self.subjects = Some((subject.to_vec(), subject.to_vec())),
            Some((first, last)) => {
                if subject < first.as_slice() {
                    *first = subject.to_vec();
                }
                if subject > last.as_slice() {
                    *last = subject.to_vec();
                }
            }
        }
    }

    /// Where `self` and `other` may hold a quad in common.
    pub fn shared_with(&self, other: &Facts) -> Shared {
        let empty = self.subjects.is_none() || other.subjects.is_none();
        if !self.subjects_unknown && !other.subjects_unknown {
            match (&self.subjects, &other.subjects) {
                _ if empty => return Shared::Nothing,
                (Some((a0, a1)), Some((b0, b1))) if a1 < b0 || b1 < a0 => return Shared::Nothing,
                _ => {}
            }
        }
        match (&self.graphs, &other.graphs) {
            (Some(a), Some(b)) => {
                let both: BTreeSet<String> = a.intersection(b).cloned().collect();
                if both.is_empty() {
                    Shared::Nothing
                } else {
                    Shared::Graphs(both)
                }
            }
            _ => Shared::Anything,
        }
    }
}

/// Where two chunks may hold a quad in common.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shared {
    /// Nowhere: shown disjoint.
    Nothing,
    /// Only in these graphs (canonical tokens, `DEFAULT` for the default graph).
    Graphs(BTreeSet<String>),
    /// Anywhere: nothing shows otherwise.
    Anything,
}

impl Shared {
    /// Whether a quad in graph `gkey` may be shared.
    pub fn holds(&self, gkey: &str) -> bool {
        match self {
            Shared::Nothing => false,
            Shared::Graphs(g) => g.contains(gkey),
            Shared::Anything => true,
        }
    }

    /// Whether a pattern over `graphs` may meet a shared quad.
    pub fn reaches(&self, graphs: &Graphs<'_, '_>) -> bool {
        match self {
            Shared::Nothing => false,
            Shared::Anything => true,
            Shared::Graphs(g) => g.iter().any(|gkey| graphs.holds(gkey)),
        }
    }
}

/// For each chunk, the earlier chunks it may share quads with, and where.
#[derive(Clone, Debug, Default)]
pub struct Overlaps {
    earlier: Vec<Vec<(usize, Shared)>>,
}

impl Overlaps {
    /// The overlaps of chunks with these facts, in corpus order.
    pub fn from_facts(facts: &[Facts]) -> Overlaps {
        let earlier = (0..facts.len())
            .map(|i| {
                (0..i)
                    .map(|j| (j, facts[i].shared_with(&facts[j])))
                    .filter(|(_, shared)| *shared != Shared::Nothing)
                    .collect()
            })
            .collect();
        Overlaps { earlier }
    }

    pub fn of(parts: &[View<'_>]) -> Result<Overlaps, StoreError> {
        if parts.len() < 2 {
            return Ok(Overlaps { earlier: vec![Vec::new(); parts.len()] });
        }
        let facts = parts.iter().map(Facts::of).collect::<Result<Vec<_>, _>>()?;
        Ok(Overlaps::from_facts(&facts))
    }

    /// Whether no pattern over `graphs` can meet a quad two chunks share:
    /// the bag of its matches is then the set, and sums over chunks are
    /// exact.
    pub fn disjoint_in(&self, graphs: &Graphs<'_, '_>) -> bool {
        self.earlier.iter().flatten().all(|(_, shared)| !shared.reaches(graphs))
    }

    /// The earlier chunks that may hold a quad chunk `i` holds, and where.
    pub fn earlier(&self, i: usize) -> &[(usize, Shared)] {
        self.earlier.get(i).map_or(&[], Vec::as_slice)
    }

    /// The pairs not shown disjoint, `(earlier, later, where)`.
    pub fn pairs(&self) -> Vec<(usize, usize, &Shared)> {
        self.earlier
            .iter()
            .enumerate()
            .flat_map(|(i, js)| js.iter().map(move |(j, shared)| (*j, i, shared)))
            .collect()
    }
}

/// Whether earlier chunks show a quad: the quads of the last subject looked
/// up, from each earlier chunk that may share the quad's graph (looked up
/// when a row in such a graph first asks). Rows come grouped by subject
/// (bases are sorted by it), so each subject is looked up about once per
/// chunk; memory is one subject's quads.
pub struct Seen<'a> {
    earlier: Vec<(View<'a>, Shared)>,
    subject: Option<Tok<'a>>,
    /// Which of `earlier` the current subject's quads were read from.
    looked: Vec<bool>,
    quads: HashSet<(Tok<'a>, Tok<'a>, Option<Tok<'a>>)>,
}

impl<'a> Seen<'a> {
    pub fn new(earlier: Vec<(View<'a>, Shared)>) -> Seen<'a> {
        let looked = vec![false; earlier.len()];
        Seen { earlier, subject: None, looked, quads: HashSet::new() }
    }

    /// Whether an earlier chunk may hold a quad of graph `gkey` (canonical,
    /// `DEFAULT` for the default graph): when not, no row of it is a copy.
    pub fn may_share(&self, gkey: &str) -> bool {
        self.earlier.iter().any(|(_, shared)| shared.holds(gkey))
    }

    /// Whether an earlier chunk shows `q`.
    pub fn holds(&mut self, q: &ViewQuad<'a>) -> Result<bool, StoreError> {
        let gkey = q.g.as_ref().map_or(DEFAULT_GRAPH, Tok::as_str);
        if !self.may_share(gkey) {
            return Ok(false);
        }
        if self.subject.as_ref() != Some(&q.s) {
            self.quads.clear();
            self.looked.iter_mut().for_each(|l| *l = false);
            self.subject = Some(q.s.clone());
        }
        for (k, (view, shared)) in self.earlier.iter().enumerate() {
            if self.looked[k] || !shared.holds(gkey) {
                continue;
            }
            self.looked[k] = true;
            let (answer, _) = view.quads(Some(&q.s), None, None, Graphs::All)?;
            for quad in answer {
                let quad = quad?;
                self.quads.insert((quad.p, quad.o, quad.g));
            }
        }
        Ok(self.quads.contains(&(q.p.clone(), q.o.clone(), q.g.clone())))
    }
}

/// How many of `part`'s matches of a pattern an earlier part shows: what a
/// sum of per-part counts overcounts the set by. Only the rows in graphs
/// `part` may share are read (all of its matches when nothing narrows the
/// graphs), so a count over chunks that share a few graphs stays a sum of
/// sidecar counts less a small correction.
pub fn copies<'a>(
    part: &View<'a>,
    earlier: Vec<(View<'a>, Shared)>,
    [s, p, o]: [Option<&Tok<'a>>; 3],
    graphs: Graphs<'_, 'a>,
) -> Result<usize, StoreError> {
    let mut narrowed = BTreeSet::new();
    for (_, shared) in &earlier {
        match shared {
            Shared::Nothing => {}
            Shared::Graphs(g) => narrowed.extend(g.iter().filter(|g| graphs.holds(g)).cloned()),
            Shared::Anything => return count_held(part.quads(s, p, o, graphs)?.0, Seen::new(earlier)),
        }
    }
    let mut n = 0;
    for gkey in narrowed {
        let name = Tok::Own(gkey.as_bytes().into());
        let one = if gkey == DEFAULT_GRAPH { Graphs::Default } else { Graphs::Named(&name) };
        n += count_held(part.quads(s, p, o, one)?.0, Seen::new(earlier.clone()))?;
    }
    Ok(n)
}

/// How many of `quads` an earlier part shows.
fn count_held<'a>(quads: crate::view::Quads<'a>, mut seen: Seen<'a>) -> Result<usize, StoreError> {
    let mut n = 0;
    for q in quads {
        n += usize::from(seen.holds(&q?)?);
    }
    Ok(n)
}
