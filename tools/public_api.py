#!/usr/bin/env python3
"""The public API of the `herd` library crate, one item a line, read from rustdoc's JSON.

`tools/public-api` runs rustdoc and calls this with the JSON file; it prints every item a
user of the crate can name (with every feature of the library, without the simulator's
`sim` helpers): modules, types with their public fields and variants, functions with their
signatures, methods, trait items, constants, re-exports, and the traits each type
implements (auto traits included: a type that stops being `Send` breaks its users). Blanket
implementations are left out, as `cargo public-api` leaves them out by default.

The format is this script's own, close to `cargo public-api`'s: a line per item, sorted,
so that a change to the API shows as a diff of `crates/herd/public-api.txt`.
"""

import json
import sys


# Marker traits that rustdoc lists but that no stable code can name; they come and go with
# the compiler's version.
UNSTABLE_AUTO_TRAITS = {"Freeze", "UnsafeUnpin", "StructuralPartialEq"}


def main(path):
    doc = json.load(open(path))
    api = Api(doc)
    # The first walk learns where each item is public; the second names every type by that
    # path (not by the private module it is defined in), so that moving code between private
    # modules does not change the list.
    api.walk_module(doc["root"], ["herd"])
    api.public_names, api.rendered, api.lines = dict(api.rendered), {}, []
    api.walk_module(doc["root"], ["herd"])
    for line in sorted(set(api.lines)):
        print(line)


class Api:
    def __init__(self, doc):
        self.index = {int(k): v for k, v in doc["index"].items()}
        self.paths = {int(k): v for k, v in doc["paths"].items()}
        self.lines = []
        # Items rendered in full: at their first public path (the crate's own definition
        # where that is public, otherwise the re-export).
        self.rendered = {}
        self.visiting = set()
        self.public_names = {}

    # ---- names of types ----------------------------------------------------------------

    def full_path(self, id_, short):
        if id_ in self.public_names:
            return self.public_names[id_]
        if id_ is not None and id_ in self.paths:
            return "::".join(self.paths[id_]["path"])
        return short

    def ty(self, t):
        if t is None:
            return "()"
        (kind, v), = t.items() if isinstance(t, dict) else ((t, None),)
        if kind == "resolved_path":
            return self.path(v)
        if kind == "generic":
            return v
        if kind == "primitive":
            return v
        if kind == "tuple":
            return "(" + ", ".join(self.ty(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        if kind == "slice":
            return "[" + self.ty(v) + "]"
        if kind == "array":
            return "[" + self.ty(v["type"]) + "; " + v["len"] + "]"
        if kind == "borrowed_ref":
            life = v["lifetime"] + " " if v.get("lifetime") else ""
            mut = "mut " if v["is_mutable"] else ""
            return "&" + life + mut + self.ty(v["type"])
        if kind == "raw_pointer":
            return ("*mut " if v["is_mutable"] else "*const ") + self.ty(v["type"])
        if kind == "impl_trait":
            return "impl " + self.bounds(v)
        if kind == "dyn_trait":
            parts = [self.poly_trait(p) for p in v["traits"]]
            if v.get("lifetime"):
                parts.append(v["lifetime"])
            return "dyn " + " + ".join(parts)
        if kind == "qualified_path":
            trait = self.path(v["trait"]) if v.get("trait") else None
            args = self.generic_args(v.get("args"))
            if trait:
                return "<" + self.ty(v["self_type"]) + " as " + trait + ">::" + v["name"] + args
            return self.ty(v["self_type"]) + "::" + v["name"] + args
        if kind == "function_pointer":
            sig = v["sig"]
            ins = ", ".join(self.ty(x[1]) for x in sig["inputs"])
            out = " -> " + self.ty(sig["output"]) if sig.get("output") else ""
            return "fn(" + ins + ")" + out
        if kind == "infer":
            return "_"
        return kind

    def path(self, p):
        return self.full_path(p.get("id"), p["path"]) + self.generic_args(p.get("args"))

    def poly_trait(self, p):
        hrtb = self.hrtb(p.get("generic_params", []))
        return hrtb + self.path(p["trait"])

    def hrtb(self, params):
        if not params:
            return ""
        return "for<" + ", ".join(x["name"] for x in params) + "> "

    def generic_args(self, args):
        if not args:
            return ""
        (kind, v), = args.items() if isinstance(args, dict) else ((args, None),)
        if kind == "angle_bracketed":
            parts = []
            for a in v["args"]:
                (k, x), = a.items() if isinstance(a, dict) else ((a, None),)
                if k == "lifetime":
                    parts.append(x)
                elif k == "type":
                    parts.append(self.ty(x))
                elif k == "const":
                    parts.append(x.get("expr", "_"))
                else:
                    parts.append("_")
            for c in v.get("constraints", []):
                name = c["name"] + self.generic_args(c.get("args"))
                binding = c["binding"]
                if "equality" in binding:
                    term = binding["equality"]
                    value = self.ty(term["type"]) if "type" in term else term["constant"]["expr"]
                    parts.append(name + " = " + value)
                else:
                    parts.append(name + ": " + self.bounds(binding["constraint"]))
            return "<" + ", ".join(parts) + ">" if parts else ""
        if kind == "parenthesized":
            out = " -> " + self.ty(v["output"]) if v.get("output") else ""
            return "(" + ", ".join(self.ty(x) for x in v["inputs"]) + ")" + out
        return ""

    def bounds(self, bounds):
        parts = []
        for b in bounds:
            (k, v), = b.items() if isinstance(b, dict) else ((b, None),)
            if k == "trait_bound":
                modifier = {"maybe": "?", "maybe_const": "~const "}.get(v.get("modifier"), "")
                parts.append(modifier + self.hrtb(v.get("generic_params", [])) + self.path(v["trait"]))
            elif k == "outlives":
                parts.append(v)
            elif k == "use":
                parts.append("use<" + ", ".join(str(x) for x in v) + ">")
        return " + ".join(parts)

    def generics(self, g):
        params = []
        for p in g["params"]:
            (k, v), = p["kind"].items()
            if k == "lifetime":
                params.append(p["name"] + (": " + " + ".join(v["outlives"]) if v["outlives"] else ""))
            elif k == "type":
                if v.get("is_synthetic"):
                    continue
                s = p["name"]
                if v["bounds"]:
                    s += ": " + self.bounds(v["bounds"])
                if v.get("default"):
                    s += " = " + self.ty(v["default"])
                params.append(s)
            elif k == "const":
                s = "const " + p["name"] + ": " + self.ty(v["type"])
                if v.get("default"):
                    s += " = " + v["default"]
                params.append(s)
        return "<" + ", ".join(params) + ">" if params else ""

    def where_clause(self, g):
        preds = []
        for w in g["where_predicates"]:
            (k, v), = w.items()
            if k == "bound_predicate":
                preds.append(self.hrtb(v.get("generic_params", [])) + self.ty(v["type"]) + ": " + self.bounds(v["bounds"]))
            elif k == "lifetime_predicate":
                preds.append(v["lifetime"] + ": " + " + ".join(v["outlives"]))
            elif k == "eq_predicate":
                rhs = v["rhs"]
                value = self.ty(rhs["type"]) if "type" in rhs else rhs["constant"]["expr"]
                preds.append(self.ty(v["lhs"]) + " == " + value)
        return " where " + ", ".join(preds) if preds else ""

    def signature(self, name, f):
        header = f["header"]
        quals = ""
        if header["is_const"]:
            quals += "const "
        if header["is_async"]:
            quals += "async "
        if header["is_unsafe"]:
            quals += "unsafe "
        args = []
        for arg_name, t in f["sig"]["inputs"]:
            if arg_name == "self":
                rendered = self.ty(t)
                args.append({"Self": "self", "&Self": "&self", "&mut Self": "&mut self"}.get(rendered, "self: " + rendered))
            else:
                args.append(arg_name + ": " + self.ty(t))
        out = " -> " + self.ty(f["sig"]["output"]) if f["sig"].get("output") else ""
        return quals + "fn " + name + self.generics(f["generics"]) + "(" + ", ".join(args) + ")" + out + self.where_clause(f["generics"])

    # ---- the walk ------------------------------------------------------------------------

    @staticmethod
    def attrs(item):
        shown = []
        for a in item.get("attrs", []):
            if a == "non_exhaustive" or (isinstance(a, str) and "non_exhaustive" in a):
                shown.append("#[non_exhaustive] ")
        return "".join(shown)

    def emit(self, line):
        self.lines.append(line)

    def walk_module(self, id_, path):
        if id_ in self.visiting:
            return
        self.visiting.add(id_)
        module = self.index[id_]
        self.emit("pub mod " + "::".join(path))
        for child in module["inner"]["module"]["items"]:
            item = self.index.get(child)
            if item is None or item["visibility"] != "public":
                continue
            (kind, v), = item["inner"].items()
            if kind == "use":
                self.walk_use(item, v, path)
            else:
                self.item(child, path + [item["name"]])
        self.visiting.discard(id_)

    def walk_use(self, item, use, path):
        target = use.get("id")
        if use["is_glob"]:
            if target in self.index and "module" in self.index[target]["inner"]:
                for child in self.index[target]["inner"]["module"]["items"]:
                    c = self.index.get(child)
                    if c is not None and c["visibility"] == "public":
                        self.item(child, path + [c["name"]])
            else:
                self.emit("pub use " + "::".join(path) + "::*  // " + use["source"])
            return
        name = use["name"]
        if target in self.index:
            self.item(target, path + [name])
        else:
            self.emit("pub use " + "::".join(path + [name]) + " = " + self.full_path(target, use["source"]))

    def item(self, id_, path):
        item = self.index[id_]
        (kind, v), = item["inner"].items() if isinstance(item["inner"], dict) else ((item["inner"], None),)
        name = "::".join(path)
        if kind == "module":
            if id_ in self.rendered:
                self.emit("pub use " + name + " = " + self.rendered[id_])
                return
            self.rendered[id_] = name
            self.walk_module(id_, path)
            return
        if id_ in self.rendered and self.rendered[id_] != name:
            self.emit("pub use " + name + " = " + self.rendered[id_])
            return
        self.rendered[id_] = name
        attrs = self.attrs(item)
        if kind == "struct":
            self.emit(attrs + "pub struct " + name + self.generics(v["generics"]) + self.where_clause(v["generics"]))
            skind = v["kind"]
            if isinstance(skind, dict) and "plain" in skind:
                for f in skind["plain"]["fields"]:
                    self.field(f, name)
            elif isinstance(skind, dict) and "tuple" in skind:
                for i, f in enumerate(skind["tuple"]):
                    if f is not None:
                        self.field(f, name, str(i))
            self.impls(v["impls"], name)
        elif kind == "enum":
            self.emit(attrs + "pub enum " + name + self.generics(v["generics"]) + self.where_clause(v["generics"]))
            for var in v["variants"]:
                self.variant(var, name)
            self.impls(v["impls"], name)
        elif kind == "union":
            self.emit(attrs + "pub union " + name + self.generics(v["generics"]))
            self.impls(v["impls"], name)
        elif kind == "function":
            self.emit("pub " + self.signature(name, v))
        elif kind == "trait":
            sup = ": " + self.bounds(v["bounds"]) if v["bounds"] else ""
            unsafe = "unsafe " if v["is_unsafe"] else ""
            self.emit("pub " + unsafe + "trait " + name + self.generics(v["generics"]) + sup + self.where_clause(v["generics"]))
            for child in v["items"]:
                self.assoc(child, name, in_trait=True)
        elif kind == "constant":
            self.emit("pub const " + name + ": " + self.ty(v["type"]))
        elif kind == "static":
            self.emit("pub static " + name + ": " + self.ty(v["type"]))
        elif kind == "type_alias":
            self.emit("pub type " + name + self.generics(v["generics"]) + " = " + self.ty(v["type"]))
        elif kind == "macro":
            self.emit("pub macro " + name + "!")
        elif kind == "proc_macro":
            self.emit("pub proc macro " + name)
        else:
            self.emit("pub " + kind + " " + name)

    def field(self, id_, owner, label=None):
        f = self.index[id_]
        if f["visibility"] != "public":
            return
        self.emit("pub " + owner + "::" + (label or f["name"]) + ": " + self.ty(f["inner"]["struct_field"]))

    def variant(self, id_, owner):
        var = self.index[id_]
        vname = owner + "::" + var["name"]
        kind = var["inner"]["variant"]["kind"]
        attrs = self.attrs(var)
        if kind == "plain":
            self.emit(attrs + "pub " + vname)
        elif "tuple" in kind:
            fields = [self.ty(self.index[f]["inner"]["struct_field"]) if f is not None else "_" for f in kind["tuple"]]
            self.emit(attrs + "pub " + vname + "(" + ", ".join(fields) + ")")
        else:
            self.emit(attrs + "pub " + vname)
            for f in kind["struct"]["fields"]:
                self.field(f, vname)

    def impls(self, ids, owner):
        for id_ in ids:
            imp = self.index[id_]["inner"]["impl"]
            if imp.get("blanket_impl") is not None:
                continue
            if imp["trait"] is None:
                for child in imp["items"]:
                    if self.index[child]["visibility"] == "public":
                        self.assoc(child, owner, in_trait=False)
                continue
            if imp["trait"]["path"] in UNSTABLE_AUTO_TRAITS:
                continue
            neg = "!" if imp["is_negative"] else ""
            line = ("unsafe " if imp["is_unsafe"] else "") + "impl" + self.generics(imp["generics"]) + " " + neg + self.path(imp["trait"]) + " for " + self.ty(imp["for"]) + self.where_clause(imp["generics"])
            self.emit(line)

    def assoc(self, id_, owner, in_trait):
        item = self.index[id_]
        (kind, v), = item["inner"].items()
        name = owner + "::" + item["name"]
        if kind == "function":
            self.emit("pub " + self.signature(name, v))
        elif kind == "assoc_const":
            self.emit("pub const " + name + ": " + self.ty(v["type"]))
        elif kind == "assoc_type":
            bounds = ": " + self.bounds(v["bounds"]) if v.get("bounds") else ""
            value = " = " + self.ty(v["type"]) if v.get("type") else ""
            self.emit("pub type " + name + self.generics(v["generics"]) + bounds + value)


if __name__ == "__main__":
    main(sys.argv[1])
