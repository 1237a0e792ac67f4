#!/usr/bin/env python3
"""Lists the library's public surface from rustdoc's JSON (nightly), one item per line, sorted:
the file `.ci/public-api` writes to docs/public-api.txt so that a change to the surface shows in
review. Written here rather than installing cargo-public-api: CI has no network for cargo
install, and the listing needs only paths, kinds and signatures."""
import json
import sys


def main(path):
    doc = json.load(open(path))
    index = doc["index"]
    lines = set()

    def generic_args(args):
        if not args:
            return ""
        if "angle_bracketed" in args:
            parts = []
            for a in args["angle_bracketed"]["args"]:
                if "type" in a:
                    parts.append(ty(a["type"]))
                elif "lifetime" in a:
                    parts.append(a["lifetime"])
                elif "const" in a:
                    parts.append(a["const"].get("expr", "_"))
            for c in args["angle_bracketed"].get("constraints", []):
                binding = c.get("binding", {})
                if "equality" in binding:
                    parts.append(f'{c["name"]} = {ty(binding["equality"]["type"])}')
            return "<" + ", ".join(parts) + ">" if parts else ""
        if "parenthesized" in args:
            p = args["parenthesized"]
            out = "(" + ", ".join(ty(t) for t in p["inputs"]) + ")"
            if p.get("output"):
                out += " -> " + ty(p["output"])
            return out
        return ""

    def bound(b):
        if "trait_bound" in b:
            t = b["trait_bound"]["trait"]
            return t["path"] + generic_args(t.get("args"))
        if "outlives" in b:
            return b["outlives"]
        return "?"

    def ty(t):
        if t is None:
            return "()"
        kind, v = next(iter(t.items()))
        if kind == "resolved_path":
            return v["path"] + generic_args(v.get("args"))
        if kind in ("primitive", "generic"):
            return v
        if kind == "borrowed_ref":
            life = (v["lifetime"] + " ") if v.get("lifetime") else ""
            return "&" + life + ("mut " if v["is_mutable"] else "") + ty(v["type"])
        if kind == "slice":
            return "[" + ty(v) + "]"
        if kind == "array":
            return "[" + ty(v["type"]) + "; " + v["len"] + "]"
        if kind == "tuple":
            return "(" + ", ".join(ty(x) for x in v) + ")"
        if kind == "impl_trait":
            return "impl " + " + ".join(bound(b) for b in v)
        if kind == "dyn_trait":
            traits = [p["trait"]["path"] + generic_args(p["trait"].get("args")) for p in v["traits"]]
            if v.get("lifetime"):
                traits.append(v["lifetime"])
            return "dyn " + " + ".join(traits)
        if kind == "qualified_path":
            return f'<{ty(v["self_type"])}>::{v["name"]}'
        if kind == "raw_pointer":
            return ("*mut " if v["is_mutable"] else "*const ") + ty(v["type"])
        return kind

    def generics(g):
        params = []
        for p in g.get("params", []):
            k = p["kind"]
            if "lifetime" in k:
                params.append(p["name"])
            elif "type" in k:
                if k["type"].get("is_synthetic"):
                    continue
                bounds = k["type"].get("bounds", [])
                s = p["name"]
                if bounds:
                    s += ": " + " + ".join(bound(b) for b in bounds)
                if k["type"].get("default"):
                    s += " = " + ty(k["type"]["default"])
                params.append(s)
            elif "const" in k:
                params.append("const " + p["name"] + ": " + ty(k["const"]["type"]))
        return "<" + ", ".join(params) + ">" if params else ""

    def fn_sig(name, f):
        s = f["sig"]
        ins = []
        for pname, ptype in s["inputs"]:
            if pname == "self":
                rendered = ty(ptype)
                ins.append({"Self": "self", "&Self": "&self", "&mut Self": "&mut self"}.get(rendered, f"self: {rendered}"))
            else:
                ins.append(f"{pname}: {ty(ptype)}")
        out = f" -> {ty(s['output'])}" if s.get("output") else ""
        head = f["header"]
        prefix = ("const " if head.get("is_const") else "") + ("unsafe " if head.get("is_unsafe") else "")
        return f"{prefix}fn {name}{generics(f['generics'])}({', '.join(ins)}){out}"

    def item(id_, path):
        it = index.get(str(id_))
        if it is None:
            return
        kind, v = next(iter(it["inner"].items()))
        name = it.get("name")
        here = f"{path}::{name}" if name else path
        if kind == "use":
            target = v.get("id")
            if target is not None and str(target) in index:
                target_item = index[str(target)]
                if v["is_glob"]:
                    for sub in target_item["inner"]["module"]["items"]:
                        item(sub, path)
                else:
                    rename(target, f"{path}::{v['name']}")
            else:
                lines.add(f"pub use {v['source']} as {path}::{v['name']}")
            return
        rename(id_, here)

    def impls(v, here):
        for impl_id in v.get("impls", []):
            impl = index[str(impl_id)]["inner"]["impl"]
            if impl.get("is_synthetic") or impl.get("blanket_impl"):
                continue
            if impl.get("trait"):
                t = impl["trait"]
                lines.add(f"impl {t['path']}{generic_args(t.get('args'))} for {here}")
                continue
            for sub in impl["items"]:
                s = index[str(sub)]
                if s["visibility"] != "public":
                    continue
                sk, sv = next(iter(s["inner"].items()))
                if sk == "function":
                    lines.add(f"{here}::{fn_sig(s['name'], sv)}")
                elif sk == "assoc_const":
                    lines.add(f"{here}::const {s['name']}: {ty(sv['type'])}")

    def rename(id_, here):
        it = index[str(id_)]
        kind, v = next(iter(it["inner"].items()))
        if kind == "module":
            lines.add(f"pub mod {here}")
            for sub in v["items"]:
                item(sub, here)
        elif kind == "function":
            lines.add(f"pub {fn_sig(here, v)}")
        elif kind == "struct":
            lines.add(f"pub struct {here}{generics(v['generics'])}")
            fields = v["kind"].get("plain", {}).get("fields", []) if isinstance(v["kind"], dict) else []
            for fid in fields:
                f = index[str(fid)]
                lines.add(f"pub {here}.{f['name']}: {ty(f['inner']['struct_field'])}")
            impls(v, here)
        elif kind == "enum":
            lines.add(f"pub enum {here}{generics(v['generics'])}")
            for vid in v["variants"]:
                var = index[str(vid)]
                vk = var["inner"]["variant"]["kind"]
                desc = ""
                if isinstance(vk, dict) and "tuple" in vk:
                    desc = "(" + ", ".join(ty(index[str(f)]["inner"]["struct_field"]) for f in vk["tuple"] if f is not None) + ")"
                elif isinstance(vk, dict) and "struct" in vk:
                    desc = " { " + ", ".join(f"{index[str(f)]['name']}: {ty(index[str(f)]['inner']['struct_field'])}" for f in vk["struct"]["fields"]) + " }"
                lines.add(f"pub {here}::{var['name']}{desc}")
            impls(v, here)
        elif kind == "trait":
            lines.add(f"pub trait {here}{generics(v['generics'])}")
            for sub in v["items"]:
                s = index[str(sub)]
                sk, sv = next(iter(s["inner"].items()))
                if sk == "function":
                    lines.add(f"{here}::{fn_sig(s['name'], sv)}")
                elif sk == "assoc_const":
                    lines.add(f"{here}::const {s['name']}: {ty(sv['type'])}")
                elif sk == "assoc_type":
                    lines.add(f"{here}::type {s['name']}")
            for impl_id in v.get("implementations", []):
                impl = index[str(impl_id)]["inner"]["impl"]
                lines.add(f"impl {here} for {ty(impl['for'])}")
        elif kind == "type_alias":
            lines.add(f"pub type {here}{generics(v['generics'])} = {ty(v['type'])}")
        elif kind == "constant":
            lines.add(f"pub const {here}: {ty(v['type'])}")
        elif kind == "macro":
            lines.add(f"pub macro {here}!")
        else:
            lines.add(f"pub {kind} {here}")

    root = index[str(doc["root"])]
    for id_ in root["inner"]["module"]["items"]:
        item(id_, "precsolve")
    print("\n".join(sorted(lines)))


if __name__ == "__main__":
    main(sys.argv[1])
