//! The library's floors import only downwards: the graph of which top-level module of `src/`
//! names which (`crate::name` in its files, its tests included) has no cycle. A cycle makes
//! each module of it impossible to read, test or move without the others; the last one
//! (`page ⇄ lab ⇄ sentences`, through two text helpers) went unseen for months.

#![cfg(not(target_arch = "wasm32"))]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// The top-level modules `lib.rs` declares.
fn top_level_modules() -> BTreeSet<String> {
    let lib = fs::read_to_string(Path::new(SOURCE).join("lib.rs")).expect("src/lib.rs reads");
    lib.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("mod "))?;
            Some(rest.trim_end_matches(';').to_string())
        })
        .collect()
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/ lists") {
        let path = entry.expect("src/ lists").path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`sentences_tests.rs` to `sentences`,
/// `page/ood.rs` to `page`); `None` for the crate root and the binaries.
fn owner(path: &Path, modules: &BTreeSet<String>) -> Option<String> {
    let relative = path.strip_prefix(SOURCE).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    let stem = first.trim_end_matches(".rs");
    let name = stem.strip_suffix("_tests").unwrap_or(stem);
    modules.contains(name).then(|| name.to_string())
}

/// Each module's set of the other top-level modules its files name as `crate::name`.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = top_level_modules();
    let mut files = Vec::new();
    rust_files(Path::new(SOURCE), &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for file in files {
        let Some(from) = owner(&file, &modules) else {
            continue;
        };
        let source = fs::read_to_string(&file).expect("a source file reads");
        // Code only: a doc comment may link to any module without importing it.
        let text: String = source
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for (at, _) in text.match_indices("crate::") {
            let name: String = text[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name != from && modules.contains(&name) {
                graph
                    .get_mut(&from)
                    .expect("every owner is a module")
                    .insert(name);
            }
        }
    }
    graph
}

/// A cycle through `node`, as the path that closes it, if the depth-first walk finds one.
fn find_cycle(
    node: &str,
    graph: &BTreeMap<String, BTreeSet<String>>,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(start) = path.iter().position(|n| n == node) {
        let mut cycle = path[start..].to_vec();
        cycle.push(node.to_string());
        return Some(cycle);
    }
    if done.contains(node) {
        return None;
    }
    path.push(node.to_string());
    for next in &graph[node] {
        if let Some(cycle) = find_cycle(next, graph, path, done) {
            return Some(cycle);
        }
    }
    path.pop();
    done.insert(node.to_string());
    None
}

#[test]
fn no_top_level_module_imports_one_that_imports_it_back() {
    let graph = import_graph();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(cycle) = find_cycle(node, &graph, &mut Vec::new(), &mut done) {
            panic!("src/ has an import cycle: {}", cycle.join(" → "));
        }
    }
}

#[test]
fn the_graph_sees_the_imports_it_checks() {
    let graph = import_graph();
    assert!(graph["page"].contains("lab"), "page imports lab: {graph:?}");
    assert!(
        graph["sentences"].contains("text"),
        "sentences imports text: {graph:?}"
    );
    assert!(
        graph["plot"].contains("lab"),
        "plot draws lab's OOD views: {graph:?}"
    );
}
