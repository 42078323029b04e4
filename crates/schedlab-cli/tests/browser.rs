//! The reproduction's web page in a real browser (Debian's Chromium, headless): drawn from a
//! full reproduction's results.json (tests/data/results-full.json, kept as `reproduce`
//! wrote it, so old results keep rendering with new page code), then loaded from disk. The
//! test checks the DOM after the page's script ran (every table and finding present), that
//! the page made no request (Chromium's network log: a request the page starts has the
//! page's origin, `null` for a file, as its initiator; the browser's own background
//! requests have none), that it logged nothing to the console, and that screenshots at 360
//! and 1 920 px are not blank, and that it prints to many pages. The screenshots and the
//! PDF stay in target/html-screenshots/ for a person to look at.
//!
//! Firefox, where installed, renders it too (a screenshot, not blank).
//!
//! Chromium is found as `SCHEDLAB_CHROMIUM`, `chromium`, `chromium-browser` or
//! `google-chrome`. Without one the test fails when `SCHEDLAB_REQUIRE_BROWSER=1` (as
//! `.ci/run` sets it, having installed Debian's `chromium`), and otherwise says it skipped.

use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

fn schedlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
}

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("SCHEDLAB_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    on_path(&["chromium", "chromium-browser", "google-chrome"])
}

/// The first of `names` found on PATH.
fn on_path(names: &[&str]) -> Option<PathBuf> {
    names.iter().find_map(|name| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {name}"))
            .output()
            .ok()?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
    })
}

/// The full reproduction's results (the fixture) and its page, drawn by `schedlab report`
/// into a directory of its own (removed when the returned guard drops).
fn draw_fixture(what: &str) -> (PathBuf, PathBuf, TempDir) {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results-full.json");
    let dir = tempdir(what);
    let st = schedlab()
        .arg("report")
        .arg(&results)
        .arg("--out")
        .arg(dir.path())
        .status()
        .expect("schedlab runs");
    assert!(st.success());
    let page = dir.path().join("index.html");
    (results, page, dir)
}

/// Headless Chromium on `page` and `args`, killed after two minutes; returns (stdout,
/// stderr).
fn run_chromium(browser: &Path, page: &Path, args: &[String]) -> (String, String) {
    run_chromium_at(browser, page, "", args)
}

/// [`run_chromium`] on `page` with `fragment` (e.g. `#selftest`).
fn run_chromium_at(
    browser: &Path,
    page: &Path,
    fragment: &str,
    args: &[String],
) -> (String, String) {
    let profile = tempdir("chromium-profile");
    let out = Command::new("timeout")
        .arg("120")
        .arg(browser)
        .args([
            "--headless",
            "--disable-dev-shm-usage",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}{fragment}", page.display()))
        .output()
        .expect("chromium starts");
    assert!(out.status.success(), "chromium failed: {:?}", out);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The requests a page started, by Chromium's network log: those whose initiator is an
/// origin (a file's is `null`), other than to files and data URLs. The browser's own
/// background requests have none ("not an origin").
fn page_requests(netlog: &Path) -> Vec<String> {
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(netlog).expect("net log")).unwrap();
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let p = &e["params"];
            let initiator = p["initiator"].as_str()?;
            let url = p["url"].as_str()?;
            let outside = initiator != "not an origin"
                && !url.starts_with("file:")
                && !url.starts_with("data:");
            outside.then(|| format!("{url} from {initiator}"))
        })
        .collect()
}

/// Chromium, or `None` where it may be absent (the test then says it skipped); a panic
/// where `SCHEDLAB_REQUIRE_BROWSER=1`.
fn browser_or_skip() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(
            std::env::var("SCHEDLAB_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "SCHEDLAB_REQUIRE_BROWSER=1 but no chromium found (install Debian's chromium)"
        );
        eprintln!("skipped: no chromium (set SCHEDLAB_REQUIRE_BROWSER=1 to require it)");
    }
    found
}

/// A directory of its own under the system's temporary directory, removed when the guard
/// drops (the browsers' profiles and the pages would otherwise pile up, a dozen a run).
fn tempdir(what: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("schedlab-browser-{what}-"))
        .tempdir()
        .expect("a temporary directory")
}

/// Where the screenshots are kept: the workspace's target directory.
fn shots_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let d = target.join("html-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A screenshot that is not blank: many colours, and a good share of non-white pixels.
fn assert_not_blank(png_path: &Path) {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).expect("screenshot"));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let bytes = &buf[..info.buffer_size()];
    let px = info.color_type.samples();
    let mut colours = std::collections::BTreeSet::new();
    let mut inked = 0usize;
    let pixels = bytes.len() / px;
    for p in bytes.chunks(px) {
        colours.insert(p[..3.min(px)].to_vec());
        if p[..3.min(px)].iter().any(|&c| c < 200) {
            inked += 1;
        }
    }
    assert!(
        info.width > 300 && colours.len() > 20 && inked * 100 > pixels,
        "{}: {}x{}, {} colours, {inked} of {pixels} pixels inked",
        png_path.display(),
        info.width,
        info.height,
        colours.len()
    );
}

#[test]
fn the_reproduction_page_renders_in_chromium_with_every_table_and_finding() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let (results, page, _guard) = draw_fixture("page");
    let dir = page.parent().unwrap().to_path_buf();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();

    // The DOM after the script ran.
    let netlog = dir.join("netlog.json");
    let (dom, stderr) = run_chromium(
        &browser,
        &page,
        &[
            format!("--log-net-log={}", netlog.display()),
            "--dump-dom".into(),
        ],
    );
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script ran to its end"
    );
    let tables = json["tables"].as_array().unwrap();
    assert!(tables.len() >= 13);
    for t in tables {
        let id = t["id"].as_str().unwrap();
        assert!(dom.contains(&format!("data-table=\"{id}\"")), "table {id}");
        assert!(dom.contains(&format!("id=\"grid-{id}\"")), "grid of {id}");
    }
    let findings = json["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 5);
    for f in findings {
        let n = f["number"].as_u64().unwrap();
        assert!(
            dom.contains(&format!("data-finding=\"{n}\"")),
            "finding {n}"
        );
    }
    assert_eq!(dom.matches("class=\"verdict\"").count(), 5, "every verdict");
    assert_eq!(
        dom.matches("How to rerun a cell").count(),
        tables.len(),
        "each table says how to rerun a cell"
    );
    assert!(dom.matches("<svg").count() > tables.len(), "charts drawn");

    // Nothing logged to the console, nothing uncaught.
    let console: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console: {console:?}");

    // No request left the page.
    let requests = page_requests(&netlog);
    assert!(requests.is_empty(), "the page requested {requests:?}");

    // The script at work, at a phone's width and a wide screen's: a focused point shows
    // its tip, a filter hides the rows it does not match, nothing scrolls sideways.
    for width in [360, 1920] {
        let (dom, _) = run_chromium_at(
            &browser,
            &page,
            "#selftest",
            &[format!("--window-size={width},1000"), "--dump-dom".into()],
        );
        let verdict: String = dom
            .split("data-selftest=")
            .nth(1)
            .unwrap_or("no self-test")
            .chars()
            .take(40)
            .collect();
        assert!(
            verdict.starts_with("\"tip=true filter=true fits=true\""),
            "at {width} px: {verdict}"
        );
    }

    // Screenshots at a phone's width and a wide screen's, kept for a person to look at.
    let shots = shots_dir();
    for (w, h) in [(360, 2400), (1920, 1400)] {
        let png = shots.join(format!("reproduction-{w}.png"));
        run_chromium(
            &browser,
            &page,
            &[
                format!("--screenshot={}", png.display()),
                format!("--window-size={w},{h}"),
            ],
        );
        assert_not_blank(&png);
    }

    // In print: every section on paper, several pages of it.
    let pdf = shots.join("reproduction.pdf");
    run_chromium(
        &browser,
        &page,
        &[
            format!("--print-to-pdf={}", pdf.display()),
            "--no-pdf-header-footer".into(),
        ],
    );
    let bytes = std::fs::read(&pdf).expect("the printed page");
    let pages = bytes
        .windows(b"/Type /Page".len() + 1)
        .filter(|w| w.starts_with(b"/Type /Page") && !w.ends_with(b"s"))
        .count();
    assert!(pages >= 10, "{pages} pages printed");
}

#[test]
fn a_page_that_requests_or_logs_is_caught() {
    // The checks above can fail: a page fetching an address and logging is seen.
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let guard = tempdir("bad");
    let dir = guard.path();
    let page = dir.join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><img src=\"http://example.invalid/x.png\">\
         <script>console.error('oops');</script></body></html>",
    )
    .unwrap();
    let netlog = dir.join("netlog.json");
    let (_, stderr) = run_chromium(
        &browser,
        &page,
        &[
            format!("--log-net-log={}", netlog.display()),
            "--dump-dom".into(),
        ],
    );
    assert!(stderr.contains("CONSOLE"), "{stderr}");
    let requests = page_requests(&netlog);
    assert!(
        requests
            .iter()
            .any(|r| r.starts_with("http://example.invalid/x.png")),
        "{requests:?}"
    );
}

/// The page opens in Firefox too (headless screenshot, not blank), where Firefox is
/// installed (`.ci/run` installs Chromium only: this one says it skipped there).
#[test]
fn the_reproduction_page_renders_in_firefox() {
    let Some(firefox) = on_path(&["firefox-esr", "firefox"]) else {
        eprintln!("skipped: no firefox");
        return;
    };
    let (_, page, _guard) = draw_fixture("firefox");
    let profile = tempdir("firefox-profile");
    let png = shots_dir().join("reproduction-firefox-1280.png");
    let out = Command::new("timeout")
        .arg("120")
        .arg(firefox)
        .arg("--headless")
        .arg("--profile")
        .arg(profile.path())
        .args(["--window-size", "1280,1400", "--screenshot"])
        .arg(&png)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("firefox starts");
    assert!(out.status.success(), "firefox failed: {out:?}");
    assert_not_blank(&png);
}
