//! The reproduction, one run and a sweep as self-contained web pages.
//!
//! A page is built from the JSON the project already writes — `results.json` of
//! `reproduce`, a run's report, a sweep's merged rows — and nothing else, so old results
//! render with new page code (`schedlab report results.json --out DIR`). Everything is in
//! the one file: styles, a few dozen lines of script (hover and focus tips, row filters),
//! and the charts, drawn here as SVG with a focusable point per value. A content security
//! policy forbids every request, so the page opens from disk with no network.
//!
//! Colours: a cell's background says how far the simulated value is from the published
//! one in five steps of one hue, light to dark, so grey print keeps the order; the ratio is
//! printed beside it. Series differ by marker shape as well as by colour (Okabe–Ito), and
//! published points are filled, simulated ones open.

use std::fmt::Write as _;

use serde_json::Value;

mod chart;

pub use chart::{chart, small_chart, Series};

/// Escape text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A number as the tables print it.
pub(crate) fn num(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A DOM id from a table id or a label.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// How far apart a simulated and a published value are, as a colour step 0..=4:
/// within 10 %, 25 %, 50 %, 2×, beyond.
pub fn band(sim: f64, published: f64) -> usize {
    if sim <= 0.0 || published <= 0.0 {
        return 4;
    }
    let f = (sim / published).max(published / sim);
    [1.1, 1.25, 1.5, 2.0]
        .iter()
        .position(|&limit| f <= limit)
        .unwrap_or(4)
}

const BAND_TEXT: [&str; 5] = [
    "within 10 %",
    "within 25 %",
    "within 50 %",
    "within 2x",
    "beyond 2x",
];

/// The page around a body: styles, the script, the security policy.
fn page(title: &str, nav: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <a class=\"skip\" href=\"#main\">Skip to the content</a>\n{nav}\
         <main id=\"main\">\n{body}</main>\n<div id=\"tip\" role=\"tooltip\" hidden></div>\n\
         <script>{SCRIPT}</script>\n</body>\n</html>\n",
        esc(title)
    )
}

const STYLE: &str = r#"
:root{--fg:#1a1a1a;--muted:#555;--line:#ccc;--bg:#fff;--accent:#0072B2}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:0 16px 48px}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:#ff0;padding:4px}
nav.toc{max-width:1180px;margin:0 auto;padding:8px 16px;border-bottom:1px solid var(--line);line-height:1.9}
main nav.toc{padding:6px 0}
nav.toc ol{margin:4px 0;padding-left:20px;columns:2 260px}
h1{font-size:1.6em;margin:16px 0 4px}h2{font-size:1.3em;margin:32px 0 8px;border-bottom:2px solid var(--line)}
h3{font-size:1.05em;margin:16px 0 6px}
a{color:var(--accent)}
:focus-visible{outline:3px solid #E69F00;outline-offset:2px}
.summary{color:var(--muted)}
.finding{border:1px solid var(--line);border-left:6px solid #999;padding:8px 12px;margin:12px 0;break-inside:avoid}
.finding.yes{border-left-color:#009E73}.finding.no{border-left-color:#D55E00}
.verdict{font-weight:600}.finding dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:6px 0}
.finding dt{font-weight:600}.finding dd{margin:0}
.charts{display:flex;flex-wrap:wrap;gap:12px}.charts figure{margin:0;flex:1 1 300px;max-width:460px;min-width:0}
figcaption{font-size:.85em;color:var(--muted)}
svg{max-width:100%;height:auto;display:block}
svg text{font:11px system-ui,sans-serif;fill:#333}
svg .pt:focus{outline:none;stroke:#E69F00;stroke-width:3}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.88em;margin:8px 0}
th,td{border:1px solid var(--line);padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f2f2f2}th.row,td.row{text-align:left;position:sticky;left:0;background:#fafafa}
.b0{background:#f7f7f7}.b1{background:#fde0c5}.b2{background:#fdb97d}.b3{background:#e8703a;color:#000}.b4{background:#a63603;color:#fff}
.legend span{display:inline-block;padding:1px 6px;margin:2px;border:1px solid var(--line)}
.targets .met{color:#00734f}.targets .missed{color:#b33c00;font-weight:600}
code{font-size:.9em;background:#f4f4f4;padding:1px 3px;word-break:break-all}
.filter{margin:4px 0}.filter input{font:inherit;padding:2px 6px;max-width:100%}
#tip{position:absolute;z-index:10;background:#222;color:#fff;padding:6px 8px;border-radius:4px;font-size:.85em;max-width:min(420px,90vw);pointer-events:none;white-space:pre-line}
@media (max-width:600px){body{font-size:14px}main{padding:0 8px 32px}nav.toc ol{columns:1}}
@media print{nav.toc,.filter,.skip,#tip{display:none}a{color:inherit}.finding,figure{break-inside:avoid}details{display:block}.scroll{overflow:visible}table{font-size:.7em}th,td{white-space:normal;padding:1px 3px}th.row,td.row{position:static}}
"#;

const SCRIPT: &str = r#"
(function(){
  var tip=document.getElementById('tip');
  function show(el){
    var t=el.getAttribute('data-tip'); if(!t){return;}
    tip.textContent=t; tip.hidden=false;
    var r=el.getBoundingClientRect();
    var x=window.scrollX+r.left; var y=window.scrollY+r.bottom+6;
    tip.style.left=Math.max(4,Math.min(x,window.scrollX+document.documentElement.clientWidth-tip.offsetWidth-4))+'px';
    if(r.bottom+6+tip.offsetHeight>document.documentElement.clientHeight){y=window.scrollY+r.top-tip.offsetHeight-6;}
    tip.style.top=Math.max(window.scrollY+2,y)+'px';
  }
  function hide(){tip.hidden=true;}
  document.addEventListener('mouseover',function(e){var el=e.target.closest&&e.target.closest('[data-tip]'); if(el){show(el);}else{hide();}});
  document.addEventListener('focusin',function(e){var el=e.target.closest&&e.target.closest('[data-tip]'); if(el){show(el);}else{hide();}});
  document.addEventListener('keydown',function(e){if(e.key==='Escape'){hide();}});
  document.querySelectorAll('input[data-filter]').forEach(function(inp){
    var table=document.getElementById(inp.getAttribute('data-filter'));
    inp.addEventListener('input',function(){
      var q=inp.value.toLowerCase();
      table.querySelectorAll('tbody tr').forEach(function(tr){
        tr.hidden=q!==''&&tr.textContent.toLowerCase().indexOf(q)<0;
      });
    });
  });
  window.addEventListener('beforeprint',function(){document.querySelectorAll('details').forEach(function(d){d.open=true;});});
  window.addEventListener('resize',hide);
  if(location.hash==='#selftest'){
    // For the browser test: a point's tip shows on focus, a filter hides rows, and the
    // page does not scroll sideways at this width.
    var pt=document.querySelector('.pt, td[data-tip]'); if(pt){pt.focus();}
    var tipShown=!!pt&&!tip.hidden&&tip.textContent.length>0;
    var inp=document.querySelector('input[data-filter]'); var filtered=true;
    if(inp){
      inp.value='no row is called this'; inp.dispatchEvent(new Event('input'));
      document.getElementById(inp.getAttribute('data-filter')).querySelectorAll('tbody tr').forEach(function(tr){filtered=filtered&&tr.hidden;});
      inp.value=''; inp.dispatchEvent(new Event('input'));
    }
    var fits=document.documentElement.scrollWidth<=document.documentElement.clientWidth+1;
    document.body.setAttribute('data-selftest','tip='+tipShown+' filter='+filtered+' fits='+fits);
  }
  document.body.setAttribute('data-ready','1');
})();
"#;

/// A small chart of a finding's evidence: each point's published and simulated values.
fn evidence_chart(ev: &Value) -> String {
    let label = ev["label"].as_str().unwrap_or("");
    let points = ev["points"].as_array().cloned().unwrap_or_default();
    let cats: Vec<String> = points
        .iter()
        .map(|p| p[0].as_str().unwrap_or("").to_string())
        .collect();
    let mut published = Series {
        name: "published".into(),
        style: 0,
        published: true,
        points: Vec::new(),
    };
    let mut simulated = Series {
        name: "simulated".into(),
        style: 1,
        published: false,
        points: Vec::new(),
    };
    for (i, p) in points.iter().enumerate() {
        if let Some(v) = p[1].as_f64() {
            published
                .points
                .push((i, v, format!("{} {}", cats[i], num(v))));
        }
        if let Some(v) = p[2].as_f64() {
            simulated
                .points
                .push((i, v, format!("{} {}", cats[i], num(v))));
        }
    }
    let series: Vec<Series> = [published, simulated]
        .into_iter()
        .filter(|s| !s.points.is_empty())
        .collect();
    let svg = small_chart(label, &cats, &series);
    if svg.is_empty() {
        return String::new();
    }
    format!(
        "<figure>{svg}<figcaption>{}</figcaption></figure>",
        esc(label)
    )
}

/// The rerun command of one cell of a table: the cell's own machine (older results: the
/// table's), its CPUs, policy, workload and seeds, and what the cell reads of the report
/// when that is not `result.value`. A searched cell's value is the largest setting that
/// completes: the command is one step of the search.
pub fn rerun_command(machine: &str, cell: &Value) -> String {
    let repeats = cell["repeats"].as_array().map_or(1, |r| r.len().max(1));
    let seeds = if repeats > 1 {
        format!("--repeat {repeats}")
    } else {
        "--seed 1".into()
    };
    let mut cmd = format!(
        "schedlab run --machine '{}' --cpus {} --policy '{}' --workload '{}' {seeds}",
        cell["machine"].as_str().unwrap_or(machine),
        cell["cpus"].as_u64().unwrap_or(1),
        cell["policy"].as_str().unwrap_or(""),
        cell["workload"].as_str().unwrap_or("")
    );
    if let Some(m) = cell["metric"].as_str().filter(|m| *m != "result.value") {
        let _ = write!(cmd, " --format json   (the cell reads {m})");
    }
    if let Some(param) = cell["search"]["param"].as_str() {
        let _ = write!(
            cmd,
            "   (one step of a search: the value is the largest {param}, in steps of {}, that completes)",
            cell["search"]["step"].as_u64().unwrap_or(1)
        );
    }
    cmd
}

fn uniq<'a>(it: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for s in it {
        if !v.iter().any(|x| x == s) {
            v.push(s.to_string());
        }
    }
    v
}

/// One table's section: scores and targets, chart, the published | simulated | ratio grid,
/// the rerun commands.
fn table_section(t: &Value, traces: &Value) -> String {
    let id = t["id"].as_str().unwrap_or("table");
    let machine = t["machine"].as_str().unwrap_or("");
    let unit = t["unit"].as_str().unwrap_or("");
    let cells = t["cells"].as_array().cloned().unwrap_or_default();
    let rows = uniq(cells.iter().map(|c| c["row"].as_str().unwrap_or("")));
    let policies = uniq(cells.iter().map(|c| c["policy"].as_str().unwrap_or("")));
    let mut o = String::new();
    let _ = write!(
        o,
        "<section id=\"{}\" class=\"table\" data-table=\"{}\">\n<h2>{} — {}</h2>\n\
         <p class=\"summary\">machine <code>{}</code>, {} ({} is better)</p>\n",
        slug(id),
        esc(id),
        esc(id),
        esc(t["title"].as_str().unwrap_or("")),
        esc(machine),
        esc(unit),
        esc(t["better"].as_str().unwrap_or("lower"))
    );
    let s = &t["scores"];
    let score = |k: &str| {
        s[k].as_f64()
            .map_or("n/a".to_string(), |v| format!("{v:.2}"))
    };
    let _ = writeln!(
        o,
        "<p>Scores: order {} ({} pairs), ratio {}, magnitude {} (worst {})</p>",
        score("order"),
        s["order_pairs"].as_u64().unwrap_or(0),
        score("ratio"),
        score("magnitude"),
        score("max_factor")
    );
    if let Some(targets) = t["targets"].as_array().filter(|a| !a.is_empty()) {
        o.push_str("<ul class=\"targets\">");
        for g in targets {
            let met = g["met"].as_bool().unwrap_or(false);
            let _ = write!(
                o,
                "<li class=\"{}\">{}: {}</li>",
                if met { "met" } else { "missed" },
                if met { "met" } else { "MISSED" },
                esc(g["what"].as_str().unwrap_or(""))
            );
        }
        o.push_str("</ul>\n");
    }
    // The chart: per policy, published (filled) and simulated (open).
    let mut series = Vec::new();
    for (k, p) in policies.iter().enumerate() {
        let mut pubs = Series {
            name: format!("{p} published"),
            style: k,
            published: true,
            points: Vec::new(),
        };
        let mut sims = Series {
            name: format!("{p} simulated"),
            style: k,
            published: false,
            points: Vec::new(),
        };
        for c in cells.iter().filter(|c| c["policy"].as_str() == Some(p)) {
            let row = c["row"].as_str().unwrap_or("");
            let i = rows.iter().position(|r| r == row).unwrap_or(0);
            if let Some(v) = c["published"].as_f64() {
                pubs.points
                    .push((i, v, format!("{row}: {} {unit}", num(v))));
            }
            if let Some(v) = c["simulated"].as_f64() {
                let spread = match (c["min"].as_f64(), c["max"].as_f64()) {
                    (Some(a), Some(b)) if a != b => format!(", seeds {}–{}", num(a), num(b)),
                    _ => String::new(),
                };
                sims.points.push((
                    i,
                    v,
                    format!(
                        "{row}: {} {unit}{spread}\n{machine}, {} CPUs, {}\n{}",
                        num(v),
                        c["cpus"].as_u64().unwrap_or(0),
                        c["workload"].as_str().unwrap_or(""),
                        rerun_command(machine, c)
                    ),
                ));
            }
        }
        series.extend([pubs, sims].into_iter().filter(|s| !s.points.is_empty()));
    }
    let svg = chart(id, unit, &rows, &series);
    if !svg.is_empty() {
        let _ = writeln!(
            o,
            "<figure>{svg}<figcaption>{}: published filled and solid, simulated open and dashed; \
             hover or focus a point for its value and run.</figcaption></figure>",
            esc(id)
        );
    }
    // The grid.
    let tid = format!("grid-{}", slug(id));
    let _ = write!(
        o,
        "<div class=\"filter\"><label>Filter rows <input type=\"search\" data-filter=\"{tid}\" \
         placeholder=\"e.g. 8cpu\"></label></div>\n<div class=\"scroll\"><table id=\"{tid}\">\
         <thead><tr><th class=\"row\" rowspan=\"2\">row</th>"
    );
    for p in &policies {
        let _ = write!(o, "<th colspan=\"3\">{}</th>", esc(p));
    }
    o.push_str("</tr><tr>");
    for _ in &policies {
        o.push_str("<th>published</th><th>simulated</th><th>ratio</th>");
    }
    o.push_str("</tr></thead><tbody>");
    for row in &rows {
        let _ = write!(o, "<tr><td class=\"row\">{}</td>", esc(row));
        for p in &policies {
            let hit = cells.iter().enumerate().find(|(_, c)| {
                c["row"].as_str() == Some(row.as_str()) && c["policy"].as_str() == Some(p)
            });
            let Some((idx, c)) = hit else {
                o.push_str("<td></td><td></td><td></td>");
                continue;
            };
            let pubv = c["published"].as_f64();
            let simv = c["simulated"].as_f64();
            let cmd = rerun_command(machine, c);
            let key = format!("{id}#{idx}");
            let links = trace_links(traces, &key);
            let _ = write!(
                o,
                "<td>{}</td>",
                pubv.map(num).unwrap_or_else(|| "—".into())
            );
            match simv {
                Some(v) => {
                    let spread = match (c["min"].as_f64(), c["max"].as_f64()) {
                        (Some(a), Some(b)) if a != b => format!(" (seeds {}–{})", num(a), num(b)),
                        _ => String::new(),
                    };
                    let _ = write!(
                        o,
                        "<td tabindex=\"0\" data-tip=\"{tip}\" aria-label=\"{} {tip}\">{}{links}</td>",
                        num(v),
                        num(v),
                        tip = esc(&format!("{key}{spread}\n{cmd}"))
                    );
                }
                None => {
                    let err = c["error"].as_str().unwrap_or("no value");
                    let _ = write!(o, "<td data-tip=\"{}\">error</td>", esc(err));
                }
            }
            match (pubv, simv) {
                (Some(pv), Some(sv)) if pv > 0.0 => {
                    let b = band(sv, pv);
                    let _ = write!(
                        o,
                        "<td class=\"b{b}\" title=\"{}\">{:.2}</td>",
                        BAND_TEXT[b],
                        sv / pv
                    );
                }
                _ => o.push_str("<td></td>"),
            }
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>\n");
    o.push_str("<p class=\"legend\">ratio = simulated / published: ");
    for (b, text) in BAND_TEXT.iter().enumerate() {
        let _ = write!(o, "<span class=\"b{b}\">{text}</span>");
    }
    o.push_str("</p>\n");
    if let Some(first) = cells.first() {
        let _ = write!(
            o,
            "<p>How to rerun a cell (focus a simulated value for its own): <code>{}</code></p>\n\
             <details><summary>Every cell's command</summary><ol>",
            esc(&rerun_command(machine, first))
        );
        for c in &cells {
            let _ = write!(
                o,
                "<li><code>{}</code></li>",
                esc(&rerun_command(machine, c))
            );
        }
        o.push_str("</ol></details>\n");
    }
    o.push_str("</section>\n");
    o
}

/// Links to a cell's trace files, when the reproduction traced it.
fn trace_links(traces: &Value, key: &str) -> String {
    let Some(t) = traces.get(key) else {
        return String::new();
    };
    let mut o = String::new();
    for (field, label) in [("perfetto", "trace"), ("timeline", "timeline")] {
        if let Some(path) = t[field].as_str() {
            let _ = write!(o, " <a href=\"{}\">{label}</a>", esc(&href(path)));
        }
    }
    o
}

/// A file path as a link target: characters a URL reserves percent-encoded.
fn href(path: &str) -> String {
    let mut o = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

/// The reproduction's page from its `results.json`.
pub fn reproduction_page(results: &Value) -> String {
    let tables = results["tables"].as_array().cloned().unwrap_or_default();
    let findings = results["findings"].as_array().cloned().unwrap_or_default();
    let traces = &results["traces"];
    // A compact table of contents: the findings come first on the first screen.
    let mut nav = String::from(
        "<nav class=\"toc\" aria-label=\"Contents\"><strong>Contents:</strong> \
         <a href=\"#findings\">Findings</a>",
    );
    for t in &tables {
        let id = t["id"].as_str().unwrap_or("");
        let _ = write!(
            nav,
            " · <a href=\"#{}\" title=\"{}\">{}</a>",
            slug(id),
            esc(t["title"].as_str().unwrap_or("")),
            esc(id)
        );
    }
    nav.push_str("</nav>\n");
    let reproduced = findings
        .iter()
        .filter(|f| f["reproduced"].as_bool() == Some(true))
        .count();
    let targets: Vec<bool> = tables
        .iter()
        .flat_map(|t| t["targets"].as_array().cloned().unwrap_or_default())
        .map(|g| g["met"].as_bool().unwrap_or(false))
        .collect();
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>schedlab: the 2001–2003 scheduler findings, reproduced</h1>\n\
         <p class=\"summary\">{reproduced} of {} findings reproduced (direction and magnitude \
         within {}x); {} of {} table targets met; {} tables. Generated from <code>results.json</code>; \
         <code>schedlab report results.json --out DIR</code> regenerates this page.</p>\n\
         {nav}<section id=\"findings\"><h2>Findings</h2>\n",
        findings.len(),
        super::findings::MAGNITUDE_FACTOR,
        targets.iter().filter(|&&m| m).count(),
        targets.len(),
        tables.len()
    );
    for f in &findings {
        let n = f["number"].as_u64().unwrap_or(0);
        let (class, verdict) = match (f["direction"].as_bool(), f["magnitude"].as_bool()) {
            (Some(true), Some(true)) => ("yes", "reproduced".to_string()),
            (Some(d), m) => (
                "no",
                format!(
                    "NOT reproduced: direction {}, magnitude {}",
                    if d { "holds" } else { "fails" },
                    match m {
                        Some(true) => "holds",
                        Some(false) => "fails",
                        None => "unknown",
                    }
                ),
            ),
            _ => ("", "cells missing".to_string()),
        };
        let _ = write!(
            body,
            "<article class=\"finding {class}\" id=\"finding-{n}\" data-finding=\"{n}\">\
             <h3>{n}. {}</h3><p class=\"verdict\">{}</p><dl>\
             <dt>published</dt><dd>{}</dd><dt>simulated</dt><dd>{}</dd>\
             <dt>rule</dt><dd>{}</dd></dl>",
            esc(f["title"].as_str().unwrap_or("")),
            esc(&verdict),
            esc(f["published"].as_str().unwrap_or("")),
            esc(f["simulated"].as_str().unwrap_or("")),
            esc(f["magnitude_rule"].as_str().unwrap_or(""))
        );
        let charts: String = f["evidence"]
            .as_array()
            .map(|e| e.iter().map(evidence_chart).collect())
            .unwrap_or_default();
        if !charts.is_empty() {
            let _ = write!(body, "<div class=\"charts\">{charts}</div>");
        }
        body.push_str("</article>\n");
    }
    body.push_str("</section>\n");
    if traces.as_object().is_some_and(|m| !m.is_empty()) {
        body.push_str(
            "<p>Traced cells link to their Perfetto trace: open <a href=\"https://ui.perfetto.dev\">\
             ui.perfetto.dev</a> in a browser and drag the file onto it (it stays on your \
             machine).</p>\n",
        );
    }
    for t in &tables {
        body.push_str(&table_section(t, traces));
    }
    page("schedlab reproduction", "", &body)
}

/// `schedlab report RESULTS --out DIR`: read a `results.json` and write `DIR/index.html`.
/// Returns the page's path.
pub fn write_reproduction(
    results: &std::path::Path,
    dir: &std::path::Path,
) -> Result<std::path::PathBuf, String> {
    let text = std::fs::read_to_string(results)
        .map_err(|e| format!("cannot read {}: {e}", results.display()))?;
    let json: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not a results.json (accepted: what `schedlab reproduce --out DIR` writes): {e}",
            results.display()
        )
    })?;
    if !json["tables"].is_array() {
        return Err(format!(
            "{} has no \"tables\" list (accepted: what `schedlab reproduce --out DIR` writes)",
            results.display()
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Trace links are relative to the results' directory: drawn elsewhere, they point
    // back there.
    let from = results.parent().unwrap_or(std::path::Path::new("."));
    let canon = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut json = json;
    if canon(from) != canon(dir) {
        if let Some(traces) = json["traces"].as_object_mut() {
            for t in traces.values_mut() {
                for field in ["perfetto", "timeline"] {
                    if let Some(rel) = t[field].as_str().filter(|p| !p.starts_with('/')) {
                        t[field] = Value::String(canon(&from.join(rel)).display().to_string());
                    }
                }
            }
        }
    }
    let page = dir.join("index.html");
    std::fs::write(&page, reproduction_page(&json))
        .map_err(|e| format!("cannot write {}: {e}", page.display()))?;
    Ok(page)
}

/// Flatten a JSON object into (dotted path, value) rows, numbers and strings only.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, x, out);
            }
        }
        Value::Number(n) => out.push((
            prefix.to_string(),
            n.as_f64().map(num).unwrap_or_else(|| n.to_string()),
        )),
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        Value::Bool(b) => out.push((prefix.to_string(), b.to_string())),
        _ => {}
    }
}

fn kv_table(id: &str, rows: &[(String, String)]) -> String {
    let mut o = format!(
        "<div class=\"filter\"><label>Filter <input type=\"search\" data-filter=\"{id}\"></label></div>\
         <div class=\"scroll\"><table id=\"{id}\"><thead><tr><th class=\"row\">what</th><th>value</th></tr></thead><tbody>"
    );
    for (k, v) in rows {
        let _ = write!(
            o,
            "<tr><td class=\"row\">{}</td><td>{}</td></tr>",
            esc(k),
            esc(v)
        );
    }
    o.push_str("</tbody></table></div>\n");
    o
}

/// One run's page from its report (`run --format json`), with the command that reruns it
/// and its timeline SVG if one was drawn.
pub fn run_page(report: &Value, rerun: &str, timeline_svg: Option<&str>) -> String {
    let r = &report["result"];
    let title = format!(
        "{} under {} on {}",
        report["workload"]["spec"]
            .as_str()
            .or(report["workload"]["name"].as_str())
            .unwrap_or("run"),
        report["policy"]["name"].as_str().unwrap_or(""),
        report["machine"]["name"].as_str().unwrap_or("")
    );
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>{}</h1>\n<p class=\"summary\">result: <strong>{} {}</strong> ({}, {} is better)</p>\n\
         <p>How to rerun: <code>{}</code></p>\n",
        esc(&title),
        r["value"].as_f64().map(num).unwrap_or_default(),
        esc(r["unit"].as_str().unwrap_or("")),
        esc(r["metric"].as_str().unwrap_or("")),
        esc(r["better"].as_str().unwrap_or("")),
        esc(rerun)
    );
    let mut nav = String::from(
        "<nav class=\"toc\" aria-label=\"Contents\"><ol><li><a href=\"#run\">The run</a></li>",
    );
    let mut sections = String::new();
    let mut head = Vec::new();
    for k in ["machine", "policy", "workload", "seed"] {
        flatten(k, &report[k], &mut head);
    }
    let _ = writeln!(
        sections,
        "<section id=\"run\"><h2>The run</h2>{}</section>",
        kv_table("kv-run", &head)
    );
    if let Some(l) = report.get("latency").filter(|l| !l.is_null()) {
        let mut rows = Vec::new();
        flatten("", l, &mut rows);
        nav.push_str("<li><a href=\"#latency\">Latency</a></li>");
        let _ = writeln!(
            sections,
            "<section id=\"latency\"><h2>Latency</h2>{}</section>",
            kv_table("kv-latency", &rows)
        );
    }
    if let Some(svg) = timeline_svg {
        nav.push_str("<li><a href=\"#timeline\">Timeline</a></li>");
        let _ = writeln!(
            sections,
            "<section id=\"timeline\"><h2>Timeline</h2><figure>{}</figure></section>",
            strip_xml_prolog(svg)
        );
    }
    let mut rows = Vec::new();
    flatten("", &report["counters"], &mut rows);
    nav.push_str("<li><a href=\"#counters\">Counters</a></li></ol></nav>\n");
    let _ = writeln!(
        sections,
        "<section id=\"counters\"><h2>Counters</h2>{}</section>",
        kv_table("kv-counters", &rows)
    );
    body.push_str(&sections);
    page(&title, &nav, &body)
}

/// An SVG file's markup without its XML prolog, to sit inside HTML.
fn strip_xml_prolog(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

/// A sweep's page from its merged rows (each: id, machine, cpus, policy, workload, seed,
/// metric, value, …): one chart per parameter that varies (machine, CPUs, policy,
/// workload) on the x axis, one series per combination of the others, each point the
/// median over seeds with their spread in its tip; then every row.
pub fn sweep_page(title: &str, rows: &[Value]) -> String {
    let field = |r: &Value, k: &str| match &r[k] {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    };
    let params = ["machine", "cpus", "policy", "workload"];
    let varying: Vec<&str> = params
        .iter()
        .copied()
        .filter(|k| uniq_owned(rows.iter().map(|r| field(r, k))).len() > 1)
        .collect();
    let unit = rows
        .iter()
        .find_map(|r| r["unit"].as_str())
        .unwrap_or("")
        .to_string();
    let mut body = format!(
        "<h1>{}</h1>\n<p class=\"summary\">{} cells; {}.</p>\n",
        esc(title),
        rows.len(),
        if varying.is_empty() {
            "one configuration, by seed".to_string()
        } else {
            format!("charted by {}", varying.join(", "))
        }
    );
    let axes: Vec<&str> = if varying.is_empty() {
        vec!["seed"]
    } else {
        varying.clone()
    };
    for x_key in axes {
        let others: Vec<&str> = varying.iter().copied().filter(|k| *k != x_key).collect();
        let name_of = |r: &Value| {
            let parts: Vec<String> = others.iter().map(|k| field(r, k)).collect();
            if parts.is_empty() {
                "value".to_string()
            } else {
                parts.join(" · ")
            }
        };
        let cats = uniq_owned(rows.iter().map(|r| field(r, x_key)));
        let names = uniq_owned(rows.iter().map(name_of));
        let series: Vec<Series> = names
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let points = cats
                    .iter()
                    .enumerate()
                    .filter_map(|(i, cat)| {
                        let mut vals: Vec<(f64, String)> = rows
                            .iter()
                            .filter(|r| name_of(r) == *name && field(r, x_key) == *cat)
                            .filter_map(|r| Some((r["value"].as_f64()?, field(r, "seed"))))
                            .collect();
                        if vals.is_empty() {
                            return None;
                        }
                        vals.sort_by(|a, b| a.0.total_cmp(&b.0));
                        let median =
                            crate::experiment::score::median(vals.iter().map(|v| v.0).collect())?;
                        let seeds: Vec<String> = vals
                            .iter()
                            .map(|(v, s)| format!("seed {s}: {}", num(*v)))
                            .collect();
                        Some((
                            i,
                            median,
                            format!(
                                "{x_key} = {cat}: median {} {unit}\n{}",
                                num(median),
                                seeds.join(", ")
                            ),
                        ))
                    })
                    .collect();
                Series {
                    name: name.clone(),
                    style: k,
                    published: false,
                    points,
                }
            })
            .collect();
        let svg = chart(&format!("{title}, by {x_key}"), &unit, &cats, &series);
        if !svg.is_empty() {
            let _ = writeln!(
                body,
                "<section id=\"by-{x_key}\"><h2>By {x_key}</h2><figure>{svg}<figcaption>one \
                 series per {}; each point the median over seeds</figcaption></figure></section>",
                if others.is_empty() {
                    "sweep".to_string()
                } else {
                    others.join(" · ")
                }
            );
        }
    }
    let cols = [
        "id", "machine", "cpus", "policy", "workload", "seed", "metric", "value", "unit", "error",
    ];
    let _ = write!(
        body,
        "<h2>Every cell</h2><div class=\"filter\"><label>Filter <input type=\"search\" \
         data-filter=\"sweep\"></label></div><div class=\"scroll\"><table id=\"sweep\"><thead><tr>"
    );
    for c in cols {
        let _ = write!(body, "<th>{c}</th>");
    }
    body.push_str("</tr></thead><tbody>");
    for r in rows {
        body.push_str("<tr>");
        for c in cols {
            let v = match &r[c] {
                Value::Number(n) if n.is_u64() || n.is_i64() => n.to_string(),
                Value::Number(n) => n.as_f64().map(num).unwrap_or_default(),
                Value::String(s) => s.clone(),
                _ => String::new(),
            };
            let _ = write!(body, "<td>{}</td>", esc(&v));
        }
        body.push_str("</tr>");
    }
    body.push_str("</tbody></table></div>\n");
    page(title, "", &body)
}

fn uniq_owned(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for s in it {
        if !v.contains(&s) {
            v.push(s);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn results() -> Value {
        json!({
            "tables": [{
                "id": "T1-demo", "title": "demo <table>", "machine": "piii700-1m",
                "unit": "us", "better": "lower",
                "scores": {"order": 1.0, "order_pairs": 1, "ratio": 1.1, "magnitude": 1.2, "max_factor": 3.0},
                "targets": [{"what": "order >= 0.9 (1.00)", "met": true}],
                "cells": [
                    {"cpus": 2, "policy": "linux-2.4", "workload": "reflex:tasks=2", "row": "2cpu",
                     "published": 10.0, "simulated": 10.5, "repeats": [10.5, 10.4], "min": 10.4, "max": 10.5},
                    {"cpus": 2, "policy": "o1-d1", "workload": "reflex:tasks=2", "row": "2cpu",
                     "published": 10.0, "simulated": 31.0, "repeats": [31.0]}
                ]
            }],
            "findings": [{"number": 1, "title": "a finding", "published": "x0.39", "simulated": "x0.80",
                "reproduced": false, "direction": true, "magnitude": false, "magnitude_rule": "within 1.5x",
                "evidence": [{"label": "msg/s", "points": [["4 CPUs", 100.0, 90.0], ["8 CPUs", 40.0, 70.0]]}]}],
            "traces": {"T1-demo#1": {"perfetto": "traces/T1-demo-01-o1-d1-2cpu.perfetto-trace"}}
        })
    }

    #[test]
    fn the_page_has_every_table_and_finding_and_no_address_outside_it() {
        let p = reproduction_page(&results());
        assert!(p.contains("id=\"T1-demo\""));
        assert!(p.contains("data-finding=\"1\""));
        assert!(p.contains("demo &lt;table&gt;"), "titles are escaped");
        assert!(p.contains("NOT reproduced: direction holds, magnitude fails"));
        assert!(p.contains("default-src 'none'"));
        // Nothing is fetched: no src attributes, and the one address is a link to
        // Perfetto's UI, shown only because a cell was traced.
        assert!(!p.contains(" src="));
        assert_eq!(p.matches("https://").count(), 1);
        assert!(p.contains("href=\"traces/T1-demo-01-o1-d1-2cpu.perfetto-trace\""));
        // Each simulated value is a focusable point with its run in the tip.
        assert!(p.contains("tabindex=\"0\""));
        assert!(p.contains("schedlab run --machine &#39;piii700-1m&#39; --cpus 2 --policy &#39;linux-2.4&#39; --workload &#39;reflex:tasks=2&#39; --repeat 2"));
        assert!(p.contains("seeds 10.40–10.50"));
    }

    #[test]
    fn a_cell_is_coloured_by_how_far_it_is_from_the_published_value() {
        assert_eq!(band(10.5, 10.0), 0);
        assert_eq!(band(12.0, 10.0), 1);
        assert_eq!(band(7.0, 10.0), 2);
        assert_eq!(band(19.0, 10.0), 3);
        assert_eq!(band(31.0, 10.0), 4);
        let p = reproduction_page(&results());
        assert!(p.contains("class=\"b0\""));
        assert!(p.contains("class=\"b4\""));
    }

    #[test]
    fn results_of_an_older_format_still_render() {
        // No findings' evidence, no traces, no scores: the page says less, not nothing.
        let mut r = results();
        r["findings"][0].as_object_mut().unwrap().remove("evidence");
        r.as_object_mut().unwrap().remove("traces");
        r["tables"][0].as_object_mut().unwrap().remove("scores");
        let p = reproduction_page(&r);
        assert!(p.contains("id=\"T1-demo\"") && p.contains("data-finding=\"1\""));
        assert!(p.contains("order n/a"));
    }

    #[test]
    fn a_wide_range_gets_a_log_axis() {
        let s = Series {
            name: "s".into(),
            style: 0,
            published: false,
            points: vec![(0, 1.0, "a".into()), (1, 1000.0, "b".into())],
        };
        let svg = chart("t", "us", &["a".into(), "b".into()], &[s]);
        assert!(svg.contains("us (log)"));
    }
}
