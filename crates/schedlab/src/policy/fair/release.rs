//! Which of the later EEVDF changes (modern.md's table of items beyond vanilla 6.12, each an
//! `eevdf` option) a given kernel release has, so that a host is simulated under the
//! scheduler it runs. Mainline versions come from the commits' first release; a stable
//! series (6.12.y, 6.18.y) has a change from the stable update that took it, where one did.
//!
//! Invariant: vanilla 6.12.0 (and anything older) gets no option: `eevdf`'s defaults.

/// One later change: its option, the mainline release that first had it, and the stable
/// series that took it, each with the sublevel from which it has it.
struct Change {
    option: &'static str,
    mainline: (u32, u32),
    stable: &'static [((u32, u32), u32)],
}

/// The changes, as the sources in `eevdf`'s option help give them. Debian's 6.12.117
/// (`linux-source-6.12`) has the three back-ported ones, `vprot` not.
const CHANGES: &[Change] = &[
    // aa3ee4f0b754 "sched/fair: Fixup wake_up_sync() vs DELAYED_DEQUEUE": v6.15; 6.12.37.
    Change {
        option: "sync_delayed=on",
        mainline: (6, 15),
        stable: &[((6, 12), 37)],
    },
    // sysctl_sched_base_slice 700 µs: v6.15; in Debian's 6.12.117.
    Change {
        option: "base_slice_ns=700000",
        mainline: (6, 15),
        stable: &[((6, 12), 117)],
    },
    // The protected slice (vprot): v6.17; not in 6.12.y.
    Change {
        option: "vprot=on",
        mainline: (6, 17),
        stable: &[],
    },
    // 79104becf42b "sched/fair: Forfeit vruntime on yield": v6.18-rc1; 6.12.y since
    // December 2025 (in Debian's 6.12.117).
    Change {
        option: "forfeit_yield=on",
        mainline: (6, 18),
        stable: &[((6, 12), 117)],
    },
    // 33cf66d88306 "sched/fair: Proportional newidle balance" (NI_RANDOM): v6.19-rc1;
    // stable in January 2026 with the revert of the max_newidle_lb_cost bump: 6.18.5
    // (v6.18.4..v6.18.5), 6.12.66 (after the v6.12.65 tag in the 6.12 LTS log); Debian's
    // 6.12.117 has it (features.h: NI_RANDOM true).
    Change {
        option: "ni_random=on",
        mainline: (6, 19),
        stable: &[((6, 12), 66), ((6, 18), 5)],
    },
];

/// `major.minor.sublevel` of a kernel release string (`6.18.44-fc-v669`), if it has one.
fn version(release: &str) -> Option<(u32, u32, u32)> {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|s| s.parse::<u32>().ok());
    let (major, minor) = (it.next()??, it.next()??);
    let sub = it.next().flatten().unwrap_or(0);
    Some((major, minor, sub))
}

/// The `eevdf` options (`key=value`) that simulate the scheduler of kernel `release`;
/// empty for vanilla 6.12.0, older kernels and strings that are no release.
pub fn eevdf_options_for_release(release: &str) -> Vec<&'static str> {
    let Some((major, minor, sub)) = version(release) else {
        return Vec::new();
    };
    CHANGES
        .iter()
        .filter(|c| {
            (major, minor) >= c.mainline
                || c.stable
                    .iter()
                    .any(|&(series, from)| (major, minor) == series && sub >= from)
        })
        .map(|c| c.option)
        .collect()
}

/// The `eevdf` spec that simulates a host: its HZ, and its release's later changes.
pub fn host_policy(hz: u32, release: &str) -> String {
    std::iter::once(format!("eevdf:hz={hz}"))
        .chain(
            eevdf_options_for_release(release)
                .into_iter()
                .map(String::from),
        )
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::{eevdf_options_for_release, host_policy};

    #[test]
    fn a_host_is_simulated_under_its_hz_and_its_release() {
        assert_eq!(host_policy(1000, "6.12.0"), "eevdf:hz=1000");
        assert_eq!(
            host_policy(250, "6.15.2"),
            "eevdf:hz=250,sync_delayed=on,base_slice_ns=700000"
        );
    }

    #[test]
    fn a_release_gets_the_later_changes_it_has() {
        assert!(eevdf_options_for_release("6.12.0").is_empty());
        assert!(eevdf_options_for_release("6.6.30").is_empty());
        assert!(eevdf_options_for_release("not a kernel").is_empty());
        assert_eq!(eevdf_options_for_release("6.12.40"), ["sync_delayed=on"]);
        assert_eq!(
            eevdf_options_for_release("6.12.117+deb13-amd64"),
            [
                "sync_delayed=on",
                "base_slice_ns=700000",
                "forfeit_yield=on",
                "ni_random=on"
            ]
        );
        assert_eq!(
            eevdf_options_for_release("6.12.65"),
            ["sync_delayed=on"],
            "NI_RANDOM came to 6.12.y in 6.12.66"
        );
        assert_eq!(
            eevdf_options_for_release("6.18.4"),
            [
                "sync_delayed=on",
                "base_slice_ns=700000",
                "vprot=on",
                "forfeit_yield=on"
            ]
        );
        assert_eq!(
            eevdf_options_for_release("6.16.1"),
            ["sync_delayed=on", "base_slice_ns=700000"]
        );
        assert_eq!(
            eevdf_options_for_release("6.18.44-fc-v669"),
            [
                "sync_delayed=on",
                "base_slice_ns=700000",
                "vprot=on",
                "forfeit_yield=on",
                "ni_random=on"
            ]
        );
        // Each option is one `eevdf` accepts.
        let all = eevdf_options_for_release("7.0").join(",");
        assert_eq!(all.split(',').count(), 5);
        assert!(crate::policy::build_named(&format!("eevdf:{all}"), "piii700-1m", 2).is_ok());
    }
}
