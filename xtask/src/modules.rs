//! `cargo xtask modules`: no module of a crate imports, directly or through
//! others, a module that imports it.
//!
//! Every `.rs` file under a package's `src/` is a module (`lib.rs` and
//! `main.rs` are left out: they declare and re-export; so is `src/bin/`). A
//! file depends on another when one of its paths — in a `use` or anywhere in
//! its code — starting with `crate::`, `super::` or `self::` names that module
//! or an item in it. A module naming one of its own ancestors (a child using
//! its parent's items) is the normal shape of a module tree and not counted.
//! A circle among the rest is a strongly connected component of more than one
//! file; each is printed, and any fails the check.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module of a crate, as its path from the crate root (`["adapter",
/// "builder"]`).
type ModPath = Vec<String>;

/// Runs the check over every package of the repository (or of the directory
/// given).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let root = args.first().map_or_else(crate::cmd::root, PathBuf::from);
    let circles = check(&root)?;
    for (package, circle) in &circles {
        println!(
            "{package}: circle of {} modules: {}",
            circle.len(),
            circle.join(", ")
        );
    }
    if circles.is_empty() {
        println!("modules: no import circle in any crate");
        Ok(())
    } else {
        Err(format!("{} import circle(s)", circles.len()))
    }
}

/// Every package's circles: (package directory, its modules in the circle).
pub(crate) fn check(root: &Path) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut out = Vec::new();
    for package in packages(root)? {
        let name = package
            .strip_prefix(root)
            .unwrap_or(&package)
            .display()
            .to_string();
        for circle in circles(&package.join("src"))? {
            out.push((name.clone(), circle));
        }
    }
    Ok(out)
}

/// Directories with a `Cargo.toml` and a `src/`, outside `target/` and hidden
/// directories.
fn packages(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if dir.join("Cargo.toml").is_file() && dir.join("src").is_dir() {
            found.push(dir.clone());
        }
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() && name != "target" && !name.starts_with('.') {
                stack.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The file modules under `src`: module path → file.
fn modules(src: &Path) -> Result<BTreeMap<ModPath, PathBuf>, String> {
    let mut mods = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path != src.join("bin") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let Ok(rel) = path
                .with_extension("")
                .strip_prefix(src)
                .map(Path::to_path_buf)
            else {
                continue;
            };
            let mut parts: ModPath = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            if parts == ["lib"] || parts == ["main"] || parts.is_empty() {
                continue;
            }
            mods.insert(parts, path);
        }
    }
    Ok(mods)
}

/// Collects the module-relative paths a file names: each as the module it is
/// written in (inline `mod` blocks included) and its segments.
#[derive(Default)]
struct Paths {
    /// Inline modules entered inside the file.
    inline: Vec<String>,
    found: Vec<(Vec<String>, Vec<String>)>,
}

impl Paths {
    fn push(&mut self, segments: Vec<String>) {
        if matches!(
            segments.first().map(String::as_str),
            Some("crate" | "super" | "self")
        ) {
            self.found.push((self.inline.clone(), segments));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                self.push(full);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.push(full);
            }
            syn::UseTree::Glob(_) => self.push(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.inline.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.inline.pop();
    }
}

/// Where `segments`, written in module `at`, points: an absolute module path
/// (the item's module or deeper).
fn absolute(at: &[String], segments: &[String]) -> ModPath {
    let mut base: Vec<String> = at.to_vec();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    base
}

/// The deepest file module `path` is in, if any.
fn file_module<'m>(mods: &'m BTreeMap<ModPath, PathBuf>, path: &[String]) -> Option<&'m ModPath> {
    (1..=path.len())
        .rev()
        .find_map(|n| mods.get_key_value(&path[..n]).map(|(k, _)| k))
}

/// The module dependency graph of the crate rooted at `src`.
fn graph(src: &Path) -> Result<BTreeMap<ModPath, BTreeSet<ModPath>>, String> {
    let mods = modules(src)?;
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (module, file) in &mods {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let mut paths = Paths::default();
        paths.visit_file(&ast);
        let deps = edges.entry(module.clone()).or_default();
        for (inline, segments) in paths.found {
            let mut at = module.clone();
            at.extend(inline);
            let target = absolute(&at, &segments);
            let Some(target) = file_module(&mods, &target) else {
                continue;
            };
            // Itself, or an ancestor: the module tree's own shape.
            if module.starts_with(target) {
                continue;
            }
            deps.insert(target.clone());
        }
    }
    Ok(edges)
}

/// The circles (strongly connected components of more than one module) of
/// the crate rooted at `src`, each sorted, as `a/b` names.
fn circles(src: &Path) -> Result<Vec<Vec<String>>, String> {
    let edges = graph(src)?;
    let mut tarjan = Tarjan::new(&edges);
    for v in edges.keys() {
        if !tarjan.index.contains_key(v) {
            tarjan.strong(v);
        }
    }
    Ok(tarjan.out)
}

/// Tarjan's strongly connected components.
struct Tarjan<'g> {
    edges: &'g BTreeMap<ModPath, BTreeSet<ModPath>>,
    next: usize,
    index: BTreeMap<&'g ModPath, usize>,
    low: BTreeMap<&'g ModPath, usize>,
    stack: Vec<&'g ModPath>,
    on_stack: BTreeSet<&'g ModPath>,
    out: Vec<Vec<String>>,
}

impl<'g> Tarjan<'g> {
    fn new(edges: &'g BTreeMap<ModPath, BTreeSet<ModPath>>) -> Self {
        Self {
            edges,
            next: 0,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            out: Vec::new(),
        }
    }

    fn strong(&mut self, v: &'g ModPath) {
        self.index.insert(v, self.next);
        self.low.insert(v, self.next);
        self.next += 1;
        self.stack.push(v);
        self.on_stack.insert(v);
        let edges = self.edges;
        for w in edges.get(v).into_iter().flatten() {
            let Some((w, _)) = edges.get_key_value(w) else {
                continue;
            };
            if !self.index.contains_key(w) {
                self.strong(w);
                let lw = self.low[w];
                if let Some(l) = self.low.get_mut(v) {
                    *l = (*l).min(lw);
                }
            } else if self.on_stack.contains(w) {
                let iw = self.index[w];
                if let Some(l) = self.low.get_mut(v) {
                    *l = (*l).min(iw);
                }
            }
        }
        if self.low[v] == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack.remove(w);
                component.push(w.join("/"));
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                self.out.push(component);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;

    fn write(root: &Path, files: &[(&str, &str)]) -> std::io::Result<()> {
        for (path, text) in files {
            let path = root.join(path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, text)?;
        }
        Ok(())
    }

    fn tempdir(name: &str) -> std::io::Result<PathBuf> {
        let dir = std::env::temp_dir().join(format!("xtask-modules-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    #[test]
    fn a_circle_through_use_and_inline_paths_is_found() -> TestResult {
        let dir = tempdir("circle")?;
        write(
            &dir,
            &[
                ("src/lib.rs", "mod a; mod b; mod c; mod d;"),
                ("src/a.rs", "use crate::b::B; pub struct A;"),
                ("src/b.rs", "pub struct B(crate::c::C);"),
                (
                    "src/c.rs",
                    "pub fn f() -> super::a::A { todo!() } pub struct C;",
                ),
                ("src/d.rs", "use crate::{a::A, b::*};"),
            ],
        )?;
        assert_eq!(circles(&dir.join("src"))?, [["a", "b", "c"]]);
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    #[test]
    fn children_using_their_parent_and_inline_test_modules_are_not_circles() -> TestResult {
        let dir = tempdir("tree")?;
        write(
            &dir,
            &[
                ("src/lib.rs", "mod adapter; mod shared;"),
                (
                    "src/adapter/mod.rs",
                    "mod builder; pub use builder::Builder; use crate::shared::S; struct Inner;",
                ),
                (
                    "src/adapter/builder.rs",
                    "use super::Inner; use crate::adapter::Inner as I; pub struct Builder;",
                ),
                (
                    "src/shared.rs",
                    "pub struct S; #[cfg(test)] mod tests { use super::S; use crate::shared::S as T; }",
                ),
            ],
        )?;
        assert!(circles(&dir.join("src"))?.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    #[test]
    fn the_repository_has_no_circle() -> TestResult {
        let root = crate::cmd::root();
        assert_eq!(check(&root)?, Vec::<(String, Vec<String>)>::new());
        Ok(())
    }
}
