//! SPARQL 1.1 over base ⊕ delta: spargebra parses, spareval evaluates over
//! [`dataset::StoreDataset`], sparesults and oxttl write the results.

pub mod analytic;
pub mod dataset;
pub mod display;
pub mod hints;
pub mod limits;
pub mod paths;
pub mod run;
pub mod shortcut;
pub mod subquery;
pub mod syntax;
pub mod topk;
pub mod update;
