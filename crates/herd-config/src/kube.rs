//! Kubernetes objects in a YAML stream: every document, and the `items` of a `kind: List`
//! (what `kubectl get -o yaml` prints), each with its `kind`, `metadata.name` and
//! `apiVersion`.
use super::CheckError;
use super::tree::{Node, Reader, get, load_yaml};

/// One object of a stream.
pub(crate) struct Object<'a> {
    pub(crate) node: &'a Node,
    /// Its path in the file (`items[2]`, or `document 3`).
    pub(crate) path: String,
    pub(crate) kind: String,
    pub(crate) api_version: String,
    pub(crate) name: String,
}

/// Every document of `text`, kept for [`objects`] to borrow from.
pub(crate) fn documents(r: &Reader, text: &str) -> Result<Vec<Node>, CheckError> {
    load_yaml(&r.file, text)
}

/// The objects of the documents, `List`s unfolded; a document without `kind` is bad input.
pub(crate) fn objects<'a>(r: &Reader, docs: &'a [Node]) -> Result<Vec<Object<'a>>, CheckError> {
    let mut out = Vec::new();
    for (d, doc) in docs.iter().enumerate() {
        if matches!(doc.value, super::tree::Value::Null) {
            continue;
        }
        let path = if docs.len() > 1 {
            format!("document {}", d + 1)
        } else {
            String::new()
        };
        push(r, doc, path, &mut out)?;
    }
    Ok(out)
}

fn push<'a>(
    r: &Reader,
    node: &'a Node,
    path: String,
    out: &mut Vec<Object<'a>>,
) -> Result<(), CheckError> {
    let m = r.map(node, &path)?;
    let kind = get(m, "kind").ok_or_else(|| {
        r.bad(
            node.line,
            &super::tree::join(&path, "kind"),
            "required (a Kubernetes object)",
        )
    })?;
    let kind = r.text(kind, "kind")?;
    if kind == "List" || kind.ends_with("List") && get(m, "items").is_some() {
        if let Some(items) = get(m, "items") {
            for (i, item) in r.seq(items, "items")?.iter().enumerate() {
                push(r, item, format!("{}items[{i}]", prefix(&path)), out)?;
            }
        }
        return Ok(());
    }
    let api_version = get(m, "apiVersion")
        .map(|v| r.text(v, "apiVersion"))
        .transpose()?
        .unwrap_or_default();
    let name = get(m, "metadata")
        .and_then(|md| match &md.value {
            super::tree::Value::Map(e) => get(e, "name"),
            _ => None,
        })
        .map(|n| r.text(n, "metadata.name"))
        .transpose()?
        .unwrap_or_default();
    out.push(Object {
        node,
        path,
        kind,
        api_version,
        name,
    });
    Ok(())
}

fn prefix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    }
}

/// `path.key` inside an object's path (`document 2: spec`).
pub(crate) fn at(object_path: &str, key: &str) -> String {
    if object_path.is_empty() {
        key.to_owned()
    } else if object_path.ends_with(']') && !object_path.contains(' ') {
        format!("{object_path}.{key}")
    } else {
        format!("{object_path}: {key}")
    }
}

/// A mapping's entries: key, line, value.
pub(crate) type Entries<'a> = &'a [(String, usize, Node)];

/// An object's `spec`: its entries and its path. Keys of the object beside
/// `apiVersion`, `kind`, `metadata`, `spec` and `status`, and keys of the spec outside `known`,
/// are listed as ignored; a missing `spec` is bad input naming it.
pub(crate) fn spec<'a>(
    r: &mut Reader,
    o: &Object<'a>,
    known: &[&str],
) -> Result<(Entries<'a>, String), CheckError> {
    let m = r.fields(
        o.node,
        &o.path,
        &["apiVersion", "kind", "metadata", "spec", "status"],
    )?;
    let path = at(&o.path, "spec");
    let spec = get(m, "spec").ok_or_else(|| r.bad(o.node.line, &path, "required"))?;
    let entries = r.fields(spec, &path, known)?;
    Ok((entries, path))
}
