use super::*;

#[test]
fn check_body_sees_every_tag() {
    assert!(check_body(r#"<img src="data:image/png;base64,AA"><p>x</p>"#).is_ok());
    // A second <img> that loads a file is refused as the first would be.
    let two = r#"<img src="data:image/png;base64,AA"><img src="logo.png">"#;
    assert!(matches!(check_body(two), Err(e) if e.to_string().contains("<img>")));
}

#[test]
fn bootstrap_stays_inside_its_script_element() {
    // Inlined as `<script>{BOOTSTRAP}</script>`: a closing tag would end it early, and `<!--`
    // switches the HTML parser into the script's "escaped" states.
    let lower = BOOTSTRAP.to_ascii_lowercase();
    assert!(!lower.contains("</script"), "www/report/bootstrap.js");
    assert!(!lower.contains("<!--"), "www/report/bootstrap.js");
    assert!(BOOTSTRAP.contains("globalThis.MEMVIZ_ASSETS"));
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn sha256_known_vectors() {
    // Python's hashlib.sha256(…).hexdigest().
    assert_eq!(
        hex(&sha256(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        hex(&sha256(&[b'a'; 1000])),
        "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"
    );
    assert_eq!(
        hex(&sha256(b"")),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

#[test]
fn base64_padding() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"foob"), "Zm9vYg==");
    assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
}

fn specs(src: &str) -> Vec<&str> {
    imports(src)
        .expect("imports")
        .into_iter()
        .map(|(s, e)| &src[s..e])
        .collect()
}

#[test]
fn finds_import_forms() {
    let src = r#"
// import x from './comment.js';
/* export * from './block.js' */
import { a,
  b } from './a.js';
import def, * as ns from "./b.js";
import './side.js';
export { c } from './c.js';
export * from './d.js';
export * as e from './e.js';
export { local };
const s = "import x from './string.js'";
const t = `import ${'./tpl.js'} from ${x} `;
const r = /import y from '.\/re.js'[/']/g;
const q = a / b / c;
const lazy = import('./lazy.js');
const url = import(msg.glue);
const meta = import.meta.url;
obj.import('./method.js');
const o = { import: 1, from: './not.js' };
"#;
    assert_eq!(
        specs(src),
        [
            "./a.js",
            "./b.js",
            "./side.js",
            "./c.js",
            "./d.js",
            "./e.js",
            "./lazy.js"
        ]
    );
}

#[test]
fn rejects_forms_it_cannot_rewrite() {
    for bad in [
        "import x from './x.json' with { type: 'json' };",
        "const m = import(`./${name}.js`);",
        "import x from './a\\x2ejs';",
        "const s = 'unterminated;\n",
    ] {
        assert!(imports(bad).is_err(), "{bad}");
    }
}

#[test]
fn tags_skip_comments_and_script_text() {
    let html = "<!-- <link href=c> --><script>const s = '<link href=s>';</script>\
                <LINK rel=\"modulepreload stylesheet\" href='./a&amp;b.css'><style>/* <link href=t> */</style>";
    let found = tags(html, "link");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].attr("href"), Some("./a&b.css"));
    assert_eq!(found[0].attr("rel"), Some("modulepreload stylesheet"));
    assert_eq!(tags(html, "script").len(), 1);
}

#[test]
fn paths() {
    assert_eq!(
        normalize("js", "./bridge.js").as_deref(),
        Some("js/bridge.js")
    );
    assert_eq!(normalize("js/a", "../b.js").as_deref(), Some("js/b.js"));
    assert_eq!(normalize("js", "../../x.js"), None);
    assert_eq!(
        dist_path("./main-1.css", "x").ok().as_deref(),
        Some("main-1.css")
    );
    assert!(dist_path("https://cdn.example/x.js", "x").is_err());
    assert!(dist_path("/abs.js", "x").is_err());
}
