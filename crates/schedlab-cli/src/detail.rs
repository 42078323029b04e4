//! `schedlab list machines --detail SPEC`: one machine's topology as the kernel sees it
//! (packages, nodes and their distances, LLCs, SMT siblings, the sched domains of CPU 0)
//! and every cost with its value and source, as text or JSON.

use schedlab::machine::{catalog, today, Machine};
use schedlab::policy::fair::topology::{build_domains, Topology};
use schedlab_native::host::format_cpu_list as cpu_list;

/// The CPUs of each id in `ids`, ids ascending.
fn groups(ids: &[usize]) -> Vec<Vec<usize>> {
    let mut m: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for (c, &i) in ids.iter().enumerate() {
        m.entry(i).or_default().push(c);
    }
    m.into_values().collect()
}

/// Up to `show` groups as CPU lists, then how many more.
fn some(gs: &[Vec<usize>], show: usize) -> String {
    let mut s: Vec<String> = gs.iter().take(show).map(|g| cpu_list(g)).collect();
    if gs.len() > show {
        s.push(format!("... ({} more)", gs.len() - show));
    }
    s.join("; ")
}

/// The detail of machine `spec` booted with `cpus` CPUs (all when `None`).
pub fn detail(spec: &str, cpus: Option<usize>, json: bool) -> Result<String, String> {
    let m = Machine::boot_spec(spec, cpus).map_err(|e| e.to_string())?;
    let p = m.preset;
    let t = Topology::of_machine(&m);
    let n = m.cpus;
    let packages = groups(&t.package);
    let nodes = groups(&t.node);
    let llcs = groups(&t.llc);
    let node_ids: Vec<usize> = {
        let mut v: Vec<usize> = t.node.clone();
        v.sort_unstable();
        v.dedup();
        v
    };
    let slit: Vec<Vec<u32>> = node_ids
        .iter()
        .map(|&a| node_ids.iter().map(|&b| t.distance[a][b]).collect())
        .collect();
    let sd = build_domains(&t);
    let domains: Vec<serde_json::Value> = sd
        .first()
        .map(|ds| {
            ds.iter()
                .map(|d| {
                    serde_json::json!({
                        "level": d.level,
                        "span": cpu_list(&d.span),
                        "groups": d.groups.len(),
                        "imbalance_pct": d.imbalance_pct,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let topo_sources: Vec<(String, String)> = today::sources(p.name)
        .map(|s| {
            s.into_iter()
                .filter(|(k, _)| {
                    ["topology", "slit", "reclaim_distance", "l1", "l2", "ram_mb"].contains(k)
                })
                .map(|(k, v)| (k.to_string(), v))
                .collect()
        })
        .unwrap_or_else(|| vec![("topology".into(), p.description.to_string())]);
    let costs = catalog::cost_sources(p);
    let siblings = t.siblings(0).to_vec();
    if json {
        let v = serde_json::json!({
            "name": p.name,
            "spec": spec,
            "description": p.description,
            "cpus": p.cpus,
            "booted": n,
            "topology": {
                "packages": packages.iter().map(|g| cpu_list(g)).collect::<Vec<_>>(),
                "nodes": nodes.iter().map(|g| cpu_list(g)).collect::<Vec<_>>(),
                "distance": slit,
                "llcs": llcs.iter().map(|g| cpu_list(g)).collect::<Vec<_>>(),
                "smt_siblings_of_cpu0": cpu_list(&siblings),
                "buses": m.layout.buses(),
                "domains_of_cpu0": domains,
                "sources": topo_sources
                    .iter()
                    .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                    .collect::<serde_json::Map<_, _>>(),
            },
            "costs": costs.iter().map(|(f, v, s)| serde_json::json!({"field": f, "value": v, "source": s})).collect::<Vec<_>>(),
            "limits": p.limits,
        });
        return Ok(serde_json::to_string_pretty(&v).map_err(|e| e.to_string())? + "\n");
    }
    let mut o = format!("{}  {}\n", p.name, p.description);
    o += &format!("topology ({n} of {} CPUs booted)\n", p.cpus);
    o += &format!("  packages   {}: {}\n", packages.len(), some(&packages, 4));
    o += &format!("  nodes      {}: {}\n", nodes.len(), some(&nodes, 8));
    if slit.len() > 1 {
        let rows: Vec<String> = slit
            .iter()
            .map(|r| r.iter().map(u32::to_string).collect::<Vec<_>>().join(" "))
            .collect();
        o += &format!("  distances  {} (SLIT, node by node)\n", rows.join(" | "));
    }
    o += &format!(
        "  LLCs       {} ({} CPUs each): {}\n",
        llcs.len(),
        llcs.first().map_or(0, Vec::len),
        some(&llcs, 4)
    );
    o += &format!(
        "  SMT        {} thread(s) a core; CPU 0's core: {}\n",
        siblings.len(),
        cpu_list(&siblings)
    );
    o += &format!(
        "  buses      {} (a line moves at c2c_line_ns within one)\n",
        m.layout.buses()
    );
    let doms: Vec<String> = domains
        .iter()
        .map(|d| {
            format!(
                "{} {} [{} groups]",
                d["level"].as_str().unwrap_or(""),
                d["span"].as_str().unwrap_or(""),
                d["groups"]
            )
        })
        .collect();
    o += &format!(
        "  domains    CPU 0: {}\n",
        if doms.is_empty() {
            "none (one CPU)".to_string()
        } else {
            doms.join(" -> ")
        }
    );
    for (k, v) in &topo_sources {
        o += &format!("  source     {k}: {v}\n");
    }
    o += "costs (value, source)\n";
    for (f, v, s) in &costs {
        let v = if v.is_null() {
            "-".to_string()
        } else {
            v.to_string()
        };
        o += &format!("  {f:<26} {v:>10}  {s}\n");
    }
    Ok(o)
}
