use super::*;

#[test]
fn check_body_sees_every_tag() {
    assert!(check_body(r#"<img src="data:image/png;base64,AA"><p>x</p>"#).is_ok());
    // A second <img> that loads a file is refused as the first would be.
    let two = r#"<img src="data:image/png;base64,AA"><img src="logo.png">"#;
    assert!(matches!(check_body(two), Err(e) if e.to_string().contains("<img>")));
    let refused = |body: &str| check_body(body).err().map(|e| e.to_string());
    assert!(refused("<IMG ALT='x' SRC = logo.png>").is_some_and(|e| e.contains("<img>")));
    assert!(refused("<video\n  src='clip.mp4'></video>").is_some_and(|e| e.contains("<video>")));
    assert!(refused("<p>a</p><script>x()</script>").is_some_and(|e| e.contains("script")));
    // Not a loading attribute, not a loading element: kept.
    assert_eq!(
        refused(r#"<img data-src="x.png" alt="src=x"><sourcex src="y">"#),
        None
    );
    assert_eq!(refused(r#"<link rel="icon" href='data:,'>"#), None);
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

/// The specifiers `js::imports` finds in `src` and the lines it refuses.
fn specs(src: &str) -> (Vec<(usize, &str)>, Vec<usize>) {
    let (found, errors) = js::imports(src);
    let found = found
        .iter()
        .map(|i| (i.line, &src[i.start..i.end]))
        .collect();
    let lines = errors
        .iter()
        .map(|e| match e {
            js::ImportError::Form(n, _) | js::ImportError::Elsewhere(n, _) => *n,
        })
        .collect();
    (found, lines)
}

#[test]
fn import_lines_at_the_top() {
    let src = "// main.js: import x from './comment.js';\n\
               /**\n * The shell. @typedef {import('./types').X} X\n */\n\
               import { a, b } from './a.js';\r\n\
               \n\
               import * as ns from '../b.js';   \n\
               /* export * from './block.js' */\n\
               import { $c, _d9 } from './sub/c.js';\n\
               /** @typedef {import('./bridge.js').Call} Call */\n\
               const meta = new URL('./worker.js', import.meta.url);\n\
               const glue = await import(msg.glue);\n\
               obj.import('./method.js'); // a method\n\
               export { meta };\n\
               export function f() { return Array.from(x); }\n";
    let (found, refused) = specs(src);
    assert_eq!(
        found,
        [(5, "./a.js"), (7, "../b.js"), (9, "./sub/c.js")],
        "{refused:?}"
    );
    assert_eq!(refused, Vec::<usize>::new());
}

#[test]
fn import_lines_in_other_forms_are_refused() {
    // At the top: every other form of import statement.
    for bad in [
        "import x from './x.js';",
        "import './side.js';",
        "import {a} from './a.js';",
        "import { a as b } from './a.js';",
        "import { a, b } from \"./a.js\";",
        "import { a } from './a.js'",
        "import { a } from './a.js'; const b = 1;",
        " import { a } from './a.js';",
        "import def, * as ns from './b.js';",
        "import data from './data.json' with { type: 'json' };",
        "import {",
        "import { a } from './a\\x2ejs';",
    ] {
        let (_, refused) = specs(bad);
        assert_eq!(refused, [1], "{bad}");
    }
    // Below the first line of code: any import, re-export or literal import().
    for bad in [
        "import { a } from './a.js';",
        "export * from './d.js';",
        "export { c } from './c.js';",
        "} from './multi-line.js';",
        "const lazy = import('./lazy.js');",
        "const m = await import(`./${name}.js`);",
        "const m = await import(",
        "const s = \"import y from './in-a-string.js'\";",
        "/* a comment */ import('./after-a-comment.js');",
    ] {
        let src = format!("// top\nconst x = 1;\n{bad}\n");
        let (found, refused) = specs(&src);
        assert_eq!((found.len(), refused), (0, vec![3]), "{bad}");
    }
    // Every line that breaks the rule, not only the first.
    let (_, refused) = specs("import x from './x.js';\nf();\nimport { y } from './y.js';\n");
    assert_eq!(refused, [1, 3]);
}

/// Every module of www/js keeps the import rule (js.rs), which the report relies on: its
/// imports are at its top, one `import { A, B } from './x.js';` or `import * as n from
/// './x.js';` per line, each naming a module of www/js.
#[test]
fn www_js_modules_import_only_at_their_top() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../www/js");
    let mut dirs = vec![root.clone()];
    let (mut modules, mut imports, mut broken) = (0, 0, Vec::new());
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("www/js") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|x| x != "js") {
                continue;
            }
            let text = fs::read_to_string(&path).expect("read");
            let name = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .display()
                .to_string();
            let (found, errors) = js::imports(&text);
            for e in errors {
                broken.push(format!("www/js/{name}: {e}"));
            }
            let dir = name.rsplit_once('/').map_or("", |(d, _)| d);
            for i in found {
                let spec = &text[i.start..i.end];
                match normalize(dir, spec) {
                    Some(dep) if spec.starts_with('.') && root.join(&dep).is_file() => {}
                    _ => broken.push(format!(
                        "www/js/{name}: line {}: `{spec}` is not a module of www/js",
                        i.line
                    )),
                }
                imports += 1;
            }
            modules += 1;
        }
    }
    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
    assert!(
        modules >= 10 && imports >= 20,
        "{modules} modules, {imports} imports"
    );
}

/// The repository's index.html (trunk's entry).
fn index_html() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../index.html");
    std::fs::read_to_string(path).expect("index.html")
}

#[test]
fn index_html_has_each_marker_once() {
    let html = index_html();
    for marker in [
        markers::CSS,
        markers::ENTRY,
        markers::PRELOAD,
        markers::BODY,
    ]
    .concat()
    {
        assert_eq!(html.matches(marker).count(), 1, "index.html: {marker}");
    }
    let m = markers::marked(&html).expect("index.html's markers");
    // Nothing the report needs lies outside them: the one stylesheet and the one script are
    // marked, and trunk's preload links go to the end of the head (nothing there in the source).
    let count = |text: &str, what: &str| text.matches(what).count();
    assert_eq!(count(&html, "rel=\"css\""), 1);
    assert_eq!(count(m.css, "rel=\"css\""), 1, "{}", m.css);
    assert_eq!(count(&html, "<script"), 1);
    assert_eq!(markers::attr_values(m.entry, "src"), ["js/main.js"]);
    assert_eq!(m.preload.trim(), "", "the preload marker ends the head");
    assert_eq!(m.body_tag, "<body data-memviz-state=\"empty\">");
    assert!(m.body.contains("id=\"error\"") && m.body.contains("id=\"demo-button\""));
    assert!(check_body(m.body).is_ok());
    let after_body = &html[html.find(markers::BODY[1]).expect("end") + markers::BODY[1].len()..];
    assert!(
        after_body.trim_start().starts_with("</body>"),
        "{after_body}"
    );
}

#[test]
fn markers_and_attributes() {
    let html = "<head><!-- memviz:css --><link rel=\"stylesheet\" href=\"./a.css\"><link data-href=\"x\" href=\"b.css\"><!-- /memviz:css -->\
                <!-- memviz:entry --><script type=\"module\" src=\"js/main.js?v=1\"></script><!-- /memviz:entry -->\
                <!-- memviz:preload --><link rel=\"modulepreload\" href=\"./g.js\"></head>\
                <body class=\"x\">\n <!-- memviz:body --><p>hi</p><!-- /memviz:body --></body>";
    let m = markers::marked(html).expect("marked");
    assert_eq!(markers::attr_values(m.css, "href"), ["./a.css", "b.css"]);
    assert_eq!(markers::attr_values(m.entry, "src"), ["js/main.js?v=1"]);
    assert_eq!(markers::attr_values(m.preload, "href"), ["./g.js"]);
    assert_eq!(m.body_tag, "<body class=\"x\">");
    assert_eq!(m.body, "<p>hi</p>");
    let twice = html.replace(
        "<!-- /memviz:css -->",
        "<!-- /memviz:css --><!-- /memviz:css -->",
    );
    assert_eq!(
        markers::marked(&twice).err(),
        Some(markers::MarkerError::Repeated("<!-- /memviz:css -->", 2))
    );
    let no_tag = html.replace("<body class=\"x\">", "<div>");
    assert_eq!(
        markers::marked(&no_tag).err(),
        Some(markers::MarkerError::BodyTag)
    );
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
