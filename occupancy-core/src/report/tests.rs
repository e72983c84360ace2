use super::curves::{all_curves, shared_memory_curve};
use super::table::format_occupancy;
use super::validate::validate;
use super::*;
use crate::arch::lookup;
use crate::lint::{Level, LintId};

fn example() -> Report {
    example_report()
}

#[test]
fn example_rows_are_the_calculator_answers() {
    for row in &example().kernels {
        let arch = lookup(&row.arch).unwrap();
        let mut recomputed = row.clone();
        recomputed.blocks_per_sm = 999;
        recomputed.compute(arch);
        assert_eq!(&recomputed, row);
        if row.entry {
            let answer = crate::calc::occupancy(arch, &row.kernel_facts(), &row.launch());
            assert_eq!(row.blocks_per_sm, answer.blocks_per_sm);
            assert_eq!(row.occupancy, answer.occupancy);
        }
    }
}

#[test]
fn hand_checked_rows() {
    let report = example();
    let find = |name: &str, arch: &str| {
        report
            .kernels
            .iter()
            .find(|row| row.name == name && row.arch == arch)
            .unwrap()
    };
    // 256 threads = 8 warps; 10 registers never bind; 64 warp slots → 8 blocks, 100%.
    let saxpy = find("saxpy", "sm_90");
    assert_eq!(
        (saxpy.blocks_per_sm, saxpy.occupancy, saxpy.limiters.clone()),
        (8, 1.0, vec!["warps".to_string()])
    );
    // 128 registers × 32 = 4096 per warp × 8 warps = 32768 per block: 2 of 65536.
    let gemm = find("_Z11sgemm_tiledILi128ELi8EEviiiPKfS1_Pf", "sm_80");
    assert_eq!((gemm.blocks_per_sm, gemm.occupancy), (2, 0.25));
    assert_eq!(gemm.limiters, vec!["registers".to_string()]);
    // 40 registers: 1280 per warp, 12 warps per sub-partition → 48 warps → 6 blocks; 41 loses one.
    let histogram = find("histogram", "sm_90");
    assert_eq!(histogram.blocks_per_sm, 6);
    assert_eq!(histogram.headroom.spare_registers_per_thread, Some(0));
    let device_function = find("_Z9warp_sumf", "sm_90");
    assert_eq!(
        (
            device_function.blocks_per_sm,
            device_function.limiters.len()
        ),
        (0, 0)
    );
}

#[test]
fn headroom_is_none_when_registers_never_bind() {
    let report = example();
    let mut row = report
        .kernels
        .iter()
        .find(|row| row.name == "saxpy" && row.arch == "sm_90")
        .unwrap()
        .clone();
    // One warp per block and 40000 B of shared memory: 5 blocks by shared memory (228 KiB over
    // 40000 + 1024 reserved, in 128 B units); even 255 registers (8192 per warp, 2 warps per
    // sub-partition) allow 8, so no register count costs a block.
    row.block = 32;
    row.static_smem_bytes = 40000;
    row.compute(lookup("sm_90").unwrap());
    assert_eq!(row.blocks_per_sm, 5);
    assert_eq!(row.limiters, vec!["shared_memory".to_string()]);
    assert_eq!(row.headroom.spare_registers_per_thread, None);
    assert!(row.headroom.spare_smem_bytes.is_some());
    assert!(format_text_headroom(&row).contains("reg ∞"));
}

fn format_text_headroom(row: &KernelRow) -> String {
    table::format_headroom(row)
}

#[test]
fn json_round_trips_and_has_the_contract_keys() {
    let report = example();
    let text = render_json(&report);
    let back = Report::from_json(&text).unwrap();
    assert_eq!(back, report);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let row = &value["kernels"][0];
    for key in [
        "name",
        "demangled",
        "arch",
        "entry",
        "registers",
        "barriers",
        "static_smem_bytes",
        "stack_frame_bytes",
        "spill_store_bytes",
        "spill_load_bytes",
        "blocks_per_sm",
        "occupancy",
        "limiters",
    ] {
        assert!(row.get(key).is_some(), "missing key {key} in {row}");
    }
    assert!(value["findings"].is_array());
}

#[test]
fn reading_rejects_other_schema_versions_and_garbage() {
    let error =
        Report::from_json(r#"{"schema_version": 7, "kernels": [], "findings": []}"#).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("schema version 7 is not supported"),
        "{error}"
    );
    let error = Report::from_json("not json").unwrap_err();
    assert!(
        error.to_string().starts_with("not an occupancy report"),
        "{error}"
    );
    let error =
        Report::from_json(r#"{"schema_version": 1, "kernels": [{"name": 3}], "findings": []}"#)
            .unwrap_err();
    assert!(
        error.to_string().starts_with("not an occupancy report"),
        "{error}"
    );
}

#[test]
fn text_snapshot() {
    insta::assert_snapshot!(render_text(&example()));
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!(render_markdown(&example()));
}

#[test]
fn sarif_snapshot() {
    insta::assert_snapshot!(render_sarif(&example(), "0.0.0-test"));
}

#[test]
fn json_snapshot() {
    insta::assert_snapshot!(render_json(&example()));
}

#[test]
fn html_snapshot_of_one_kernel() {
    let report = Query {
        kernels: vec!["histogram".into()],
        archs: vec!["sm_90".into()],
        ..Query::default()
    }
    .apply(&example());
    assert_eq!(report.kernels.len(), 1);
    insta::assert_snapshot!(render_html(&report, "histo"));
}

/// The HTML page's data (the JSON its script draws from) and, per row in order, its
/// `data-curves`: (curve number, current x) for each of the three axes.
fn page_curves(html: &str) -> (serde_json::Value, Vec<Vec<(usize, u64)>>) {
    let start = "<script type=\"application/json\" id=\"occupancy-data\">";
    let json = html
        .split(start)
        .nth(1)
        .and_then(|rest| rest.split("</script>").next())
        .expect("the page has its data");
    let data: serde_json::Value = serde_json::from_str(json).expect("the data is JSON");
    let rows = html
        .split("<tr id=\"k")
        .skip(1)
        .map(|row| {
            let tag = row.split('>').next().unwrap_or("");
            tag.split("data-curves=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .map(|pairs| {
                    pairs
                        .split(' ')
                        .map(|pair| {
                            let (curve, x) = pair.split_once(':').expect("curve:x");
                            (curve.parse().unwrap(), x.parse().unwrap())
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    (data, rows)
}

#[test]
fn html_has_three_curves_per_entry_kernel_and_nothing_from_the_network() {
    let report = example();
    let html = render_html(&report, "workspace");
    let (data, rows) = page_curves(&html);
    assert_eq!(
        rows.len(),
        report.kernels.len(),
        "one table row per kernel and arch"
    );
    let limiters = data["limiters"].as_array().unwrap();
    for (row, curves) in report.kernels.iter().zip(&rows) {
        if !row.entry {
            assert!(
                curves.is_empty(),
                "device function {} has no curves",
                row.name
            );
            continue;
        }
        // Each of the three is the calculator's curve, run by run, at the kernel's current x.
        let expected = all_curves(lookup(&row.arch).unwrap(), &row.curve_input());
        assert_eq!(
            curves.len(),
            3,
            "{} on {}: three curves",
            row.name,
            row.arch
        );
        for ((id, x), curve) in curves.iter().zip(&expected) {
            assert_eq!(*x, curve.current_x, "{} {:?}", row.name, curve.axis);
            let drawn = &data["curves"][*id];
            let frame = &data["frames"][drawn["f"].as_u64().unwrap() as usize];
            assert_eq!(frame["axis"], curve.axis.slug());
            assert_eq!(frame["max"], curve.x_max);
            let steps = drawn["s"].as_array().unwrap();
            assert_eq!(
                steps.len(),
                curve.steps().len(),
                "{} {:?}",
                row.name,
                curve.axis
            );
            for (step, run) in steps.iter().zip(curve.steps()) {
                assert_eq!(step[0], run.x_first);
                assert_eq!(step[1], run.x_last);
                assert_eq!(step[2], run.blocks_per_sm);
                assert_eq!(
                    format!("{:.1}%", step[3].as_f64().unwrap()),
                    format_occupancy(run.occupancy)
                );
                let bits = step[4].as_u64().unwrap();
                let named: Vec<&str> = (0..limiters.len())
                    .filter(|bit| bits & (1 << bit) != 0)
                    .map(|bit| limiters[bit].as_str().unwrap())
                    .collect();
                assert_eq!(named, run.limiters, "{} {:?}", row.name, curve.axis);
            }
        }
    }
    for forbidden in ["http://", "https://", "src=", "@import", "url("] {
        let outside_svg_namespace = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        let outside_svg_namespace =
            outside_svg_namespace.replace("var SVG = \"http://www.w3.org/2000/svg\"", "");
        assert!(
            !outside_svg_namespace.contains(forbidden),
            "page references {forbidden}"
        );
    }
    // Names with C++ template brackets are escaped.
    assert!(html.contains("sgemm_tiled&lt;128, 8&gt;"));
    assert!(!html.contains("sgemm_tiled<128"));
}

#[test]
fn sarif_results_point_at_the_attribute_with_the_cu_kernel_related() {
    let sarif: serde_json::Value = serde_json::from_str(&render_sarif(&example(), "0")).unwrap();
    let run = &sarif["runs"][0];
    assert_eq!(
        run["tool"]["driver"]["rules"].as_array().unwrap().len(),
        LintId::ALL.len()
    );
    let results = run["results"].as_array().unwrap();
    // Allow-level findings are left out.
    assert_eq!(
        results.len(),
        example()
            .findings
            .iter()
            .filter(|f| f.level != Level::Allow)
            .count()
    );
    let spill = &results[0];
    assert_eq!(spill["ruleId"], "spills");
    assert_eq!(spill["level"], "error");
    let rule_index = spill["ruleIndex"].as_u64().unwrap() as usize;
    assert_eq!(run["tool"]["driver"]["rules"][rule_index]["id"], "spills");
    let physical = &spill["locations"][0]["physicalLocation"];
    assert_eq!(
        physical["artifactLocation"]["uri"],
        "gemm-kernels/src/lib.rs"
    );
    assert_eq!(physical["region"]["startLine"], 27);
    assert_eq!(
        spill["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "gemm-kernels/kernels/reduce.cu"
    );
    assert_eq!(
        spill["locations"][0]["logicalLocations"][0]["name"],
        "reduce_spills(float const*, float*, int)"
    );
}

#[test]
fn query_filters_and_sorts() {
    let report = example();
    let by_occupancy = Query {
        sort: vec![parse_sort_key("-occupancy").unwrap()],
        ..Query::default()
    }
    .apply(&report);
    let occupancies: Vec<f64> = by_occupancy
        .kernels
        .iter()
        .map(|row| row.occupancy)
        .collect();
    let mut sorted = occupancies.clone();
    sorted.sort_by(|a, b| b.total_cmp(a));
    assert_eq!(occupancies, sorted);

    let only_spills = Query {
        lints: vec![LintId::Spills],
        ..Query::default()
    }
    .apply(&report);
    assert!(only_spills
        .kernels
        .iter()
        .all(|row| row.name == "_Z13reduce_spillsPKfPfi"));
    assert_eq!(only_spills.kernels.len(), 2);
    assert!(only_spills
        .findings
        .iter()
        .all(|finding| finding.lint == LintId::Spills));

    let one_crate = Query {
        crates: vec!["histo".into()],
        archs: vec!["90".into()],
        ..Query::default()
    }
    .apply(&report);
    assert_eq!(one_crate.kernels.len(), 1);
    assert_eq!(one_crate.findings.len(), 1);

    let by_registers = Query {
        sort: vec![parse_sort_key("regs").unwrap()],
        ..Query::default()
    }
    .apply(&report);
    let registers: Vec<u32> = by_registers
        .kernels
        .iter()
        .map(|row| row.registers)
        .collect();
    assert!(
        registers.windows(2).all(|pair| pair[0] <= pair[1]),
        "{registers:?}"
    );

    assert!("nonsense"
        .parse::<Column>()
        .unwrap_err()
        .to_string()
        .contains("the columns are: crate, kernel"));
}

#[test]
fn explanation_of_a_register_bound_kernel() {
    let report = example();
    let gemm = report
        .kernels
        .iter()
        .find(|row| row.name.contains("sgemm") && row.arch == "sm_90")
        .unwrap();
    let explanation = explain::explain(lookup("sm_90").unwrap(), gemm);
    // Registers bind at 2 blocks; warps would allow 8.
    assert_eq!(explanation.next_limit, Some((8, vec!["warps".to_string()])));
    // __launch_bounds__(256, 3) needs ≤ 80 registers: 80 × 32 = 2560 per warp, 6 per sub-partition.
    let three = &explanation.register_knobs[0];
    assert_eq!(three.blocks_per_sm, 3);
    assert!(
        three
            .change
            .starts_with("__launch_bounds__(256, 3) or max_registers = 80"),
        "{}",
        three.change
    );
    // Every knob's figures are the calculator's for the changed input.
    for knob in &explanation.register_knobs {
        let budget: u32 = knob
            .change
            .split("max_registers = ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .map_or(0, |n| n.parse().unwrap_or(0));
        if budget > 0 {
            let kernel = crate::calc::KernelFacts {
                registers_per_thread: budget,
                ..gemm.kernel_facts()
            };
            assert_eq!(
                knob.blocks_per_sm,
                crate::calc::blocks_per_sm(lookup("sm_90").unwrap(), &kernel, &gemm.launch())
            );
        }
    }
    insta::assert_snapshot!(explain::render_explanation_text(&explanation));
}

#[test]
fn explanation_of_an_unlaunchable_kernel_says_so() {
    let report = example();
    let mut gemm = report
        .kernels
        .iter()
        .find(|row| row.name.contains("sgemm") && row.arch == "sm_90")
        .unwrap()
        .clone();
    gemm.block = 512; // above the kernel's __launch_bounds__(256)
    let explanation = explain::explain(lookup("sm_90").unwrap(), &gemm);
    assert_eq!(explanation.row.blocks_per_sm, 0);
    assert!(
        explanation.assessment[0].contains("cannot start"),
        "{:?}",
        explanation.assessment
    );
}

/// `explain` keeps of a report's findings those about the row's bounds: its kernel, its arch,
/// `unreachable_bound` and `register_cap_ignored`; and shows them before what binds.
#[test]
fn an_explanation_shows_what_ptxas_did_with_the_bounds() {
    let report = example();
    let row = report.kernels[0].clone();
    let finding = |lint: LintId, kernel: &str, arch: &str| Finding {
        lint,
        level: Level::Warn,
        crate_name: row.crate_name.clone(),
        kernel: Some(kernel.to_string()),
        arch: Some(arch.to_string()),
        message: format!("{lint} of {kernel} on {arch}"),
        notes: vec!["ptxas: ptxas warning : the quote".to_string()],
        help: Some("the fix".to_string()),
        location: None,
        reason: None,
    };
    let other_arch = if row.arch == "sm_80" {
        "sm_90"
    } else {
        "sm_80"
    };
    let findings = [
        finding(LintId::UnreachableBound, &row.name, &row.arch),
        finding(LintId::Spills, &row.name, &row.arch),
        finding(LintId::RegisterCapIgnored, &row.name, other_arch),
        finding(LintId::RegisterCapIgnored, "another_kernel", &row.arch),
        finding(LintId::RegisterCapIgnored, &row.name, &row.arch),
    ];
    let explanation =
        explain::explain(lookup(&row.arch).unwrap(), &row).with_bound_findings(&findings);
    let lints: Vec<LintId> = explanation.bounds.iter().map(|f| f.lint).collect();
    assert_eq!(
        lints,
        [LintId::UnreachableBound, LintId::RegisterCapIgnored]
    );
    let text = explain::render_explanation_text(&explanation);
    let section = format!(
        "What ptxas did with the kernel's launch bounds:\n  - warn[unreachable_bound]: unreachable_bound of {0} on {1}\n      note: ptxas: ptxas warning : the quote\n      help: the fix\n",
        row.name, row.arch
    );
    assert!(text.contains(&section), "{text}");
    assert!(text.find(&section) < text.find("What binds"), "{text}");
    let plain =
        explain::render_explanation_text(&explain::explain(lookup(&row.arch).unwrap(), &row));
    assert!(!plain.contains("What ptxas did"), "{plain}");
}

#[test]
fn a_chart_of_4_gib_of_shared_memory_has_a_handful_of_ticks() {
    let arch = lookup("sm_90").unwrap();
    let mut row = example().kernels[0].clone();
    row.static_smem_bytes = u64::from(u32::MAX);
    row.dynamic_smem_bytes = u64::from(u32::MAX);
    row.compute(arch);
    let curve = shared_memory_curve(arch, &row.curve_input());
    let frame = super::html::frame(curve.axis, curve.x_max);
    // Up to 9 tick labels (it was 131073 labels and a 16 MB page).
    assert!(frame.ticks.len() <= 9, "{} x labels", frame.ticks.len());
    let html = render_html(
        &Report {
            kernels: vec![row],
            ..Report::default()
        },
        "t",
    );
    assert!(html.len() < 80_000, "{} bytes", html.len());
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn arbitrary_row() -> impl Strategy<Value = KernelRow> {
        let archs = crate::arch::all()
            .iter()
            .map(|facts| facts.name)
            .collect::<Vec<_>>();
        (
            proptest::sample::select(archs),
            0u32..=300,
            0u32..=2100,
            0u64..=300_000,
            0u64..=300_000,
            0u32..=20,
            proptest::option::of(0u32..=1100),
            proptest::option::of(0u32..=110),
            any::<bool>(),
        )
            .prop_map(
                |(
                    arch,
                    registers,
                    block,
                    static_smem,
                    dynamic_smem,
                    barriers,
                    max_threads,
                    carveout,
                    entry,
                )| {
                    let mut row = example_report().kernels[0].clone();
                    row.arch = arch.to_string();
                    row.registers = registers;
                    row.block = block;
                    row.static_smem_bytes = static_smem;
                    row.dynamic_smem_bytes = dynamic_smem;
                    row.barriers = barriers;
                    row.max_threads_per_block = max_threads;
                    row.carveout_percent = carveout;
                    row.entry = entry;
                    row.name = "k<\"&'>".to_string();
                    row.demangled = "void k<\"&'>(int)".to_string();
                    row.compute(lookup(arch).unwrap());
                    row
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Any kernel (unlaunchable ones, 0-thread blocks, carveouts above 100 included)
        /// renders in every format and can be explained, without a panic, and the HTML keeps
        /// its three charts per entry kernel with names escaped.
        #[test]
        fn every_renderer_takes_any_row(row in arbitrary_row()) {
            let report = Report { kernels: vec![row.clone()], findings: Vec::new(), ..Report::default() };
            let _ = render_text(&report);
            let _ = render_markdown(&report);
            prop_assert!(serde_json::from_str::<serde_json::Value>(&render_sarif(&report, "0")).is_ok());
            // A row in range reads back as written; one out of range (300 registers, 20
            // barriers, a 110% carveout) is refused when read, naming the row.
            match validate(&report) {
                Ok(()) => prop_assert_eq!(Report::from_json(&render_json(&report)).unwrap(), report.clone()),
                Err(_) => prop_assert!(matches!(Report::from_json(&render_json(&report)), Err(ReadError::Invalid(_)))),
            }
            let html = render_html(&report, "t");
            let (data, rows) = page_curves(&html);
            prop_assert_eq!(rows.len(), 1);
            prop_assert_eq!(rows[0].len(), if row.entry { 3 } else { 0 });
            for (curve, _) in &rows[0] {
                prop_assert!(data["curves"][*curve]["s"].is_array());
            }
            prop_assert!(!html.contains("k<\""));
            if row.entry {
                let explanation = explain::explain(lookup(&row.arch).unwrap(), &row);
                let text = explain::render_explanation_text(&explanation);
                prop_assert!(text.contains("What binds"));
                for knob in explanation.register_knobs.iter().chain(&explanation.block_knobs) {
                    prop_assert!(knob.occupancy >= 0.0 && knob.occupancy <= 1.0);
                }
            }
        }

        /// Bytes that are not a report give an error, never a panic.
        #[test]
        fn reading_arbitrary_text_never_panics(text in ".{0,200}") {
            let _ = Report::from_json(&text);
        }
    }
}

#[test]
fn many_findings_of_one_lint_print_one_example_and_one_summary() {
    let mut report = example();
    let template = report.findings[0].clone();
    report.findings.clear();
    for index in 0..300 {
        let mut finding = template.clone();
        finding.kernel = Some(format!("kernel_{index}"));
        finding.message = format!("message {index}");
        report.findings.push(finding);
    }
    let text = render_text(&report);
    assert!(text.contains("message 0"), "{text}");
    assert!(!text.contains("message 1\n"), "{text}");
    let summary = text
        .lines()
        .find(|line| line.contains("299 more like this"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        summary.contains("300 kernels in all") && summary.contains("kernel_4 (+295 more)"),
        "{summary}"
    );
    assert!(text.lines().count() < 40, "{text}");
}

/// An accepted exception (a finding allowed or expected with `reason = "..."`) is shown, with its
/// reason, in every rendering; an allowed finding without a reason is not (#15.3).
#[test]
fn accepted_exceptions_are_shown_with_their_reason_in_every_rendering() {
    let mut report = example();
    let reason = "tracked in #12: the tile needs 128 registers";
    let mut accepted = report.findings[0].clone();
    accepted.level = Level::Allow;
    accepted.reason = Some(reason.to_owned());
    accepted.notes.push(format!(
        "`expect({})` in the declaration: {reason}",
        accepted.lint
    ));
    report.findings.push(accepted);
    let silent = report
        .findings
        .iter()
        .filter(|finding| finding.level == Level::Allow && finding.reason.is_none())
        .count();
    assert_eq!(
        report.shown_findings().count() + silent,
        report.findings.len()
    );
    for (format, rendered) in [
        ("text", render_text(&report)),
        ("markdown", render_markdown(&report)),
        ("sarif", render_sarif(&report, "0.0.0-test")),
        ("html", render_html(&report, "histo")),
    ] {
        assert!(
            rendered.contains(reason),
            "{format} lacks the reason:\n{rendered}"
        );
    }
}

#[test]
fn readable_names_drop_the_return_type_and_the_parameters() {
    for (demangled, readable) in [
        (
            "void mul_mat_vec_q<1>(float const*, float const*, float*, int)",
            "mul_mat_vec_q<1>",
        ),
        (
            "void mul_mat_q<(ggml_type)2, 112, true>(char const*, int const*, float*)",
            "mul_mat_q<(ggml_type)2, 112, true>",
        ),
        ("void corpus::frames::gather(float const*, int)", "corpus::frames::gather"),
        ("void (anonymous namespace)::k(int)", "(anonymous namespace)::k"),
        (
            "void cub::DeviceRadixSortOnesweepKernel<cub::Policy<800>, true, float, unsigned int, int>(int*)",
            "cub::DeviceRadixSortOnesweepKernel<cub::Policy<800>, true, float, unsigned int, int>",
        ),
        ("saxpy", "saxpy"),
        ("", ""),
    ] {
        assert_eq!(readable_kernel_name(demangled), readable, "{demangled}");
    }
}

/// Rust kernels (Rust-CUDA, rustc's nvptx64) read as the path of their `fn`, whole: a Rust path
/// has no return type or parameter list, and its spaces are inside `<...>`.
#[test]
fn rust_kernels_read_as_the_path_of_their_fn() {
    for (symbol, readable) in [
        ("_ZN10my_kernels4gemm17h0123456789abcdefE", "my_kernels::gemm"),
        ("_RNvCs4fqI2P2rA04_10my_kernels6reduce", "my_kernels::reduce"),
        (
            "_ZN59_$LT$nvptx_demo$$Pixel$u20$as$u20$core$$ops$$arith$$Add$GT$3add17h5a1d0c3b7e9f2468E",
            "<nvptx_demo::Pixel as core::ops::arith::Add>::add",
        ),
    ] {
        let demangled = crate::ptxas::demangle(symbol).unwrap();
        assert_eq!(readable_kernel_name(&demangled), readable, "{symbol}");
    }
    for path in [
        "my_kernels::scale::<(f32, u8)>",
        "<impl my_kernels::Tile<4>>::load",
        "my_kernels::launch::{closure#0}",
    ] {
        assert_eq!(readable_kernel_name(path), path);
    }
}

proptest::proptest! {
    #[test]
    fn a_readable_name_is_part_of_the_demangled_name(text in ".{0,80}") {
        let readable = readable_kernel_name(&text);
        proptest::prop_assert!(text.contains(readable));
    }
}

/// 200,000 findings of distinct kernels in one lint: one example and one summary line counting
/// every kernel once. The summary de-duplicated kernels with `Vec::contains`, quadratic in the
/// kernels (200,000 of them took a minute); through a hash set this is a fraction of a second.
#[test]
fn findings_of_200k_distinct_kernels_summarize_in_linear_time() {
    let mut report = example();
    report.kernels.clear();
    let template = report.findings[0].clone();
    report.findings = (0..200_000)
        .map(|index| Finding {
            kernel: Some(format!("kernel_{index}")),
            ..template.clone()
        })
        .collect();
    let text = render_text(&report);
    assert!(
        text.contains("199999 more like this; 200000 kernels in all")
            && text.contains("kernel_4 (+199995 more)"),
        "{text}"
    );
    assert!(text.lines().count() < 20, "{text}");
}

/// The rows a SARIF result points at are found per (kernel, arch): a kernel compiled 50,000
/// times for sm_80 and once for sm_90 gives each sm_90 finding its row without a scan of the
/// sm_80 ones, and the same row the scan would find.
#[test]
fn row_index_finds_a_finding_row_by_kernel_and_arch() {
    let mut template = KernelRow::new("k", "sm_80", 256);
    template.compute(lookup("sm_80").unwrap());
    let mut rows = vec![template.clone(); 50_000];
    let mut on_90 = KernelRow::new("k", "sm_90", 128);
    on_90.compute(lookup("sm_90").unwrap());
    rows.push(on_90.clone());
    let index = RowIndex::new(&rows);
    let finding = |arch: Option<&str>| Finding {
        lint: LintId::Spills,
        level: Level::Deny,
        crate_name: None,
        kernel: Some("k".to_string()),
        arch: arch.map(str::to_string),
        message: String::new(),
        notes: Vec::new(),
        help: None,
        location: None,
        reason: None,
    };
    for _ in 0..50_000 {
        assert_eq!(index.first_concerned(&finding(Some("sm_90"))), Some(&on_90));
    }
    assert_eq!(index.first_concerned(&finding(None)), Some(&rows[0]));
    assert_eq!(index.first_concerned(&finding(Some("sm_75"))), None);
}

/// A row whose bound the build chose says so in the text report and in `explain`, which shows
/// the ladder: every bound tried, the chosen one starred, with the reason.
#[test]
fn a_chosen_bound_is_in_the_text_report_and_explain() {
    use crate::tune::{Bound, Candidate, Knob, TunedCandidate, Tuning, Verdict};
    let measured = |registers: u32, blocks: u32, spills: u32| {
        crate::tune::tests::measured(registers, blocks * 8, spills, 46)
    };
    let tried = |bound, found, verdict| TunedCandidate {
        candidate: Candidate {
            bound,
            measured: Some(found),
            failure: None,
            refused_spill_bytes: None,
        },
        verdict,
    };
    let mut row = KernelRow {
        registers: 48,
        min_blocks_per_sm: Some(5),
        max_threads_per_block: Some(256),
        ..KernelRow::new("chain", "sm_90", 256)
    };
    row.tuning = Some(Tuning {
        knob: Knob::MinBlocksPerSm,
        chosen: Bound::MinBlocksPerSm(5),
        reason: "the most warps within the objective".into(),
        decided_by: crate::tune::Rule::MostWarps,
        loop_growth_percent: 5,
        shared_with: Vec::new(),
        candidates: vec![
            tried(Bound::None, measured(50, 4, 0), Verdict::Baseline),
            tried(
                Bound::MinBlocksPerSm(5),
                measured(48, 5, 0),
                Verdict::Admissible,
            ),
            tried(
                Bound::MinBlocksPerSm(6),
                measured(40, 6, 35),
                Verdict::SpillsInLoops {
                    instructions: 35,
                    without_bounds: 0,
                },
            ),
        ],
    });
    row.compute(crate::arch::lookup("sm_90").unwrap());
    let report = Report {
        kernels: vec![row.clone()],
        ..Report::default()
    };
    let text = render_text(&report);
    assert!(
        text.contains("  chain on sm_90: min_blocks_per_sm = 5 (48 registers, 5 blocks/SM, 62.5% occupancy; 3 bounds tried): the most warps within the objective"),
        "{text}"
    );
    let explained = explain::render_explanation_text(&explain::explain(
        crate::arch::lookup("sm_90").unwrap(),
        &row,
    ));
    assert!(
        explained.contains(
            "Bounds chosen by the build (`min_blocks_per_sm = \"auto\"`): min_blocks_per_sm = 5"
        ),
        "{explained}"
    );
    assert!(
        explained.contains("* min_blocks_per_sm = 5 "),
        "{explained}"
    );
    assert!(
        explained.contains("35 spill instructions in loops (0 without bounds)"),
        "{explained}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["kernels"][0]["tuning"]["chosen"]["min_blocks_per_sm"], 5,
        "{json}"
    );
}
