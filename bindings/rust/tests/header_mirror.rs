//! src/sys.rs (its functions in src/sys/functions.rs) declares exactly what include/tlio/tlio.h
//! declares: every function (parameter and return types), struct field, constant and the
//! progress callback type. A function added to or changed in the header without the same change
//! here fails this test.
use std::collections::BTreeMap;
use std::path::Path;

/// name -> (parameter types, return type) or name -> field types, as Rust spells them.
type Signatures = BTreeMap<String, (Vec<String>, String)>;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e))
}

fn strip_c_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.map_or(true, |l| b < l) => {
                out.push_str(&rest[..b]);
                let end = rest[b..].find("*/").expect("closed comment") + b + 2;
                rest = &rest[end..];
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = &rest[l + rest[l..].find('\n').unwrap_or(rest.len() - l)..];
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

fn words(text: &str) -> Vec<String> {
    text.replace('*', " * ")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// A C type (words without the declarator's name) as Rust spells it in sys.rs. Pointers are
/// spelled from the inside out: each `*` is `*const` when what it points at is const (a
/// `const` before the base type for the first, right before that `*` for the others).
fn rust_type(c: &[String]) -> String {
    let stars = c.iter().filter(|w| *w == "*").count();
    let base: Vec<&str> = c
        .iter()
        .map(String::as_str)
        .filter(|w| !matches!(*w, "const" | "struct" | "*"))
        .collect();
    assert_eq!(base.len(), 1, "unexpected C type {:?}", c);
    let mut out = match base[0] {
        "char" => "c_char",
        "void" if stars == 0 => return String::new(),
        "void" => "c_void",
        "size_t" => "usize",
        "uint64_t" => "u64",
        "uint32_t" => "u32",
        "int64_t" => "i64",
        "int" => "c_int",
        "unsigned" => "c_uint",
        "double" => "f64",
        other => other,
    }
    .to_string();
    let first_star = c.iter().position(|w| w == "*").unwrap_or(c.len());
    let mut pointee_const = c[..first_star].iter().any(|w| w == "const");
    for w in c.iter().skip(first_star) {
        if w == "*" {
            out = format!("{}{}", if pointee_const { "*const " } else { "*mut " }, out);
            pointee_const = false;
        } else if w == "const" {
            pointee_const = true;
        }
    }
    out
}

/// "const char* path" -> ("path", "*const c_char"); arrays become [T; N].
fn c_declaration(decl: &str) -> (String, String) {
    let w = words(decl);
    let (name, ty) = w.split_last().expect("a declaration");
    if let Some(open) = name.find('[') {
        let n = name[open + 1..name.len() - 1].to_string();
        return (
            name[..open].to_string(),
            format!("[{}; {}]", rust_type(ty), n),
        );
    }
    (name.clone(), rust_type(ty))
}

fn c_params(list: &str) -> Vec<String> {
    if list.trim() == "void" || list.trim().is_empty() {
        return Vec::new();
    }
    list.split(',').map(|p| c_declaration(p).1).collect()
}

fn header() -> (Signatures, Signatures, BTreeMap<String, i64>) {
    // tlio.h and the header it includes for GGUF files and transcoding, as one text.
    let text = strip_c_comments(
        &(read("../../include/tlio/tlio.h") + &read("../../include/tlio/tlio_gguf.h")),
    );
    let mut functions = Signatures::new();
    for piece in text.split("TL_API ").skip(1) {
        if piece.starts_with("__") {
            continue; // the export macro's own definitions
        }
        let decl = &piece[..piece.find(';').expect("a declaration ends with ;")];
        let open = decl.find('(').unwrap();
        let (ret_and_name, params) = (&decl[..open], &decl[open + 1..decl.rfind(')').unwrap()]);
        let (name, ret) = c_declaration(ret_and_name);
        functions.insert(name, (c_params(params), ret));
    }
    // typedef void (*tl_progress_fn)(...);
    let t = &text[text.find("typedef void (*").unwrap()..];
    let t = &t[..t.find(';').unwrap()];
    let name = t["typedef void (*".len()..t.find(')').unwrap()].to_string();
    let params = &t[t.rfind('(').unwrap() + 1..t.rfind(')').unwrap()];
    functions.insert(name, (c_params(params), String::new()));

    let mut structs = Signatures::new();
    for marker in [
        "struct tl_tensor_info {",
        "typedef struct tl_quantized_info {",
        "typedef struct tl_quantize_options {",
        "typedef struct tl_open_options {",
        "typedef struct tl_compare_options {",
        "typedef struct tl_tensor_comparison {",
        "typedef struct tl_edit_options {",
        "typedef struct tl_edit_report {",
        "typedef struct tl_plan_options {",
        "typedef struct tl_plan_item_info {",
        "typedef struct tl_gguf_tensor {",
        "typedef struct tl_report_options {",
        "typedef struct tl_transcode_result {",
    ] {
        let start = text
            .find(marker)
            .unwrap_or_else(|| panic!("{} not in tlio.h", marker))
            + marker.len();
        let body = &text[start..start + text[start..].find('}').unwrap()];
        let fields = body
            .split(';')
            .filter(|f| !f.trim().is_empty())
            .map(|f| c_declaration(f).1)
            .collect();
        let name = marker.split_whitespace().rev().nth(1).unwrap().to_string();
        structs.insert(name, (fields, String::new()));
    }
    // The structs above, the two enums below, and each header's extern "C" block.
    assert_eq!(
        text.matches('{').count(),
        13 + 2 + 2,
        "tlio.h gained a struct or enum this test does not read"
    );

    let mut constants = BTreeMap::new();
    for marker in ["enum {", "typedef enum tl_dtype {"] {
        let start = text.find(marker).unwrap() + marker.len();
        let body = &text[start..start + text[start..].find('}').unwrap()];
        let mut next = 0i64;
        for entry in body.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, value) = match entry.split_once('=') {
                Some((n, v)) => (n.trim(), v.trim().parse().unwrap()),
                None => (entry, next),
            };
            constants.insert(name.to_string(), value);
            next = value + 1;
        }
    }
    for line in text
        .lines()
        .filter(|l| l.starts_with("#define TL_") && !l.contains("TL_API") && !l.contains("TLIO_"))
    {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() == 3 {
            constants.insert(
                w[1].to_string(),
                w[2].trim_end_matches('u').parse().unwrap(),
            );
        }
    }
    (functions, structs, constants)
}

fn normalize(rust: &str) -> String {
    rust.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn rust_params(list: &str) -> Vec<String> {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| normalize(p.split_once(':').expect("name: type").1))
        .collect()
}

fn sys() -> (Signatures, Signatures, BTreeMap<String, i64>) {
    let text = read("src/sys.rs") + &read("src/sys/functions.rs");
    let mut functions = Signatures::new();
    for piece in text.split("pub fn ").skip(1) {
        let decl = &piece[..piece.find(';').unwrap()];
        let open = decl.find('(').unwrap();
        let close = decl.rfind(')').unwrap();
        let ret = decl[close + 1..].trim().trim_start_matches("->").trim();
        functions.insert(
            decl[..open].trim().to_string(),
            (rust_params(&decl[open + 1..close]), normalize(ret)),
        );
    }
    let t = &text[text.find("pub type tl_progress_fn").unwrap()..];
    let t = &t[..t.find(';').unwrap()];
    let params = &t[t.find("fn(").unwrap() + 3..t.rfind(')').unwrap()];
    functions.insert(
        "tl_progress_fn".to_string(),
        (rust_params(params), String::new()),
    );

    let mut structs = Signatures::new();
    for piece in text.split("pub struct ").skip(1) {
        let name = piece[..piece.find(' ').unwrap()].to_string();
        let body = &piece[piece.find('{').unwrap() + 1..piece.find('}').unwrap()];
        if body.contains("_opaque") {
            continue;
        }
        let fields = body
            .split(",\n")
            .filter(|f| !f.trim().is_empty())
            .map(|f| normalize(f.split_once(':').unwrap().1.trim_end_matches(',')))
            .collect();
        structs.insert(name, (fields, String::new()));
    }
    let mut constants = BTreeMap::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("pub const "))
    {
        let (name, rest) = line["pub const ".len()..].split_once(':').unwrap();
        let value = rest.split_once('=').unwrap().1.trim().trim_end_matches(';');
        constants.insert(name.to_string(), value.parse().unwrap());
    }
    (functions, structs, constants)
}

fn assert_same<V: PartialEq + std::fmt::Debug>(
    what: &str,
    header: &BTreeMap<String, V>,
    crate_: &BTreeMap<String, V>,
) {
    let mut problems = Vec::new();
    for (name, c) in header {
        match crate_.get(name) {
            None => problems.push(format!(
                "{} {} is in tlio.h, not in src/sys.rs: {:?}",
                what, name, c
            )),
            Some(r) if r != c => problems.push(format!(
                "{} {}: tlio.h says {:?}, src/sys.rs {:?}",
                what, name, c, r
            )),
            _ => {}
        }
    }
    for name in crate_.keys().filter(|n| !header.contains_key(*n)) {
        problems.push(format!("{} {} is in src/sys.rs, not in tlio.h", what, name));
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn sys_rs_mirrors_tlio_h() {
    let (hf, hs, hc) = header();
    let (rf, rs, rc) = sys();
    assert!(
        hf.len() >= 43,
        "read only {} functions from tlio.h",
        hf.len()
    );
    assert_same("function", &hf, &rf);
    assert_same("struct", &hs, &rs);
    assert_same("constant", &hc, &rc);
}

#[test]
fn the_mirror_test_sees_a_change() {
    // The parser is not blind: a changed parameter type is seen as a difference.
    let (hf, _, _) = header();
    let mut changed = hf.clone();
    changed.get_mut("tl_tensor_read").unwrap().0[3] = "u64".to_string();
    assert_ne!(hf, changed);
    assert_eq!(
        hf["tl_tensor_find"],
        (
            vec![
                "*const tl_file".into(),
                "*const c_char".into(),
                "*mut usize".into()
            ],
            "c_int".into()
        )
    );
    assert_eq!(hf["tl_model_find"].0[2], "*mut *const tl_file");
}
