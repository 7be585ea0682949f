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
        dist_path("js/main.js", "x").ok().as_deref(),
        Some("js/main.js")
    );
    assert_eq!(
        dist_path("./js//main.js?v=1", "x").ok().as_deref(),
        Some("js/main.js")
    );
    assert_eq!(
        dist_path("./main-1.css", "x").ok().as_deref(),
        Some("main-1.css")
    );
    assert!(matches!(
        dist_path("js/../../x.js", "x"),
        Err(HtmlError::LeavesDist { .. })
    ));
    assert!(dist_path("https://cdn.example/x.js", "x").is_err());
    assert!(dist_path("/abs.js", "x").is_err());
}
