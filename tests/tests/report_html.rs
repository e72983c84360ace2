//! The HTML report in a real browser: Debian's chromium, headless (installed by
//! `scripts/setup-test-deps.sh`, which `scripts/test.sh` runs). The page must load without a
//! console message, every entry kernel must have its three charts with a curve and a current
//! point in the rendered DOM, and the screenshot must show them. The screenshot and the page are
//! kept under `target/tmp/report-html/` as test artifacts.
//!
//! The test fails, never skips, when chromium is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use occupancy_core::report::{example_report, render_html};

fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return PathBuf::from(path);
    }
    for candidate in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(output) = Command::new("sh")
            .args(["-c", &format!("command -v {candidate}")])
            .output()
        {
            if output.status.success() {
                return PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
            }
        }
    }
    panic!("chromium not found: run scripts/setup-test-deps.sh (apt-get install -y chromium) or set CHROMIUM");
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-html");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs headless chromium on `page` with `extra` arguments and a fresh profile; stderr carries
/// chromium's log including every console message (`CONSOLE` lines).
fn run_chromium(page: &Path, extra: &[&str], profile: &str) -> Output {
    run_chromium_at(page, "", extra, profile)
}

/// [`run_chromium`] with a URL fragment (`#sort=-registers`).
fn run_chromium_at(page: &Path, fragment: &str, extra: &[&str], profile: &str) -> Output {
    let profile_dir = artifacts().join(profile);
    let _ = std::fs::remove_dir_all(&profile_dir);
    Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--log-level=0",
        ])
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .args(extra)
        .arg(format!("file://{}{fragment}", page.display()))
        .output()
        .expect("run chromium")
}

fn console_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| line.contains("CONSOLE") || line.contains("Uncaught"))
        .map(str::to_string)
        .collect()
}

#[test]
fn console_detection_works() {
    // A control page with a console error and an exception: if chromium's log format changed and
    // the check below saw nothing, this fails instead of the real test passing vacuously.
    let page = artifacts().join("control.html");
    std::fs::write(&page, "<!DOCTYPE html><html><body><script>console.error('control-error'); undefinedFunction();</script></body></html>").unwrap();
    let output = run_chromium(&page, &["--dump-dom"], "profile-control");
    let lines = console_lines(&output);
    assert!(
        lines.iter().any(|line| line.contains("control-error")),
        "chromium's console output was not recognised; stderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn html_report_renders_without_console_errors_and_shows_every_chart() {
    let report = example_report();
    let page = artifacts().join("report.html");
    std::fs::write(&page, render_html(&report, "example workspace")).unwrap();

    // 1. The DOM after scripts ran with every row's details open, and the console.
    let output = run_chromium_at(&page, "#open=all", &["--dump-dom"], "profile-dom");
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let console = console_lines(&output);
    assert!(
        console.is_empty(),
        "console messages on the report page:\n{}",
        console.join("\n")
    );
    let dom = String::from_utf8_lossy(&output.stdout).into_owned();
    std::fs::write(artifacts().join("report.dom.html"), &dom).unwrap();
    let articles: Vec<&str> = dom.split("<article class=\"kernel\"").skip(1).collect();
    assert_eq!(
        articles.len(),
        report.kernels.len(),
        "one section per kernel and arch"
    );
    for (article, row) in articles.iter().zip(&report.kernels) {
        let article = article.split("</article>").next().unwrap_or("");
        assert!(article.contains(&format!("data-arch=\"{}\"", row.arch)));
        let charts = article.matches("<svg class=\"chart\"").count();
        if row.entry {
            assert_eq!(charts, 3, "{} on {}: three charts", row.name, row.arch);
            assert_eq!(
                article.matches("class=\"curve\"").count(),
                3,
                "{} on {}: three curves",
                row.name,
                row.arch
            );
            assert_eq!(
                article.matches("<circle class=\"now\"").count(),
                3,
                "{} on {}: current point on each",
                row.name,
                row.arch
            );
            for axis in ["block", "registers", "smem"] {
                assert!(
                    article.contains(&format!("data-axis=\"{axis}\"")),
                    "{} {axis}",
                    row.name
                );
            }
        } else {
            assert_eq!(charts, 0, "device function {} has no charts", row.name);
        }
    }
    // The sortable table made it through the parser with every row, each followed by its
    // details.
    let table = dom
        .split("<table class=\"kernels\"")
        .nth(1)
        .and_then(|rest| rest.split("<tbody>").nth(1))
        .unwrap_or("");
    assert_eq!(table.matches("<tr id=\"k").count(), report.kernels.len());
    assert_eq!(
        table.matches("<tr class=\"detail\"").count(),
        report.kernels.len()
    );

    // 2. A screenshot of the table with the details open (through a frame: the page scrolls
    // to the table): not blank, and the chart colours are on it.
    let screenshot = artifacts().join("report.png");
    let _ = std::fs::remove_file(&screenshot);
    std::fs::write(
        artifacts().join("report-frame.html"),
        harness("report.html#open=all", 1400, 2400),
    )
    .unwrap();
    let output = run_chromium(
        &artifacts().join("report-frame.html"),
        &[
            "--window-size=1400,2400",
            &format!("--screenshot={}", screenshot.display()),
        ],
        "profile-screenshot",
    );
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&screenshot).expect("screenshot written"),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).unwrap();
    let channels = info.color_type.samples();
    let pixels = &pixels[..info.buffer_size()];
    assert!(
        info.width >= 1000 && info.height >= 2000,
        "{}x{}",
        info.width,
        info.height
    );
    let mut non_background = 0usize;
    let mut curve_blue = 0usize;
    let mut current_orange = 0usize;
    let mut colours = std::collections::HashSet::new();
    for pixel in pixels.chunks(channels) {
        let (red, green, blue) = (pixel[0], pixel[1], pixel[2]);
        colours.insert((red, green, blue));
        if !(red > 240 && green > 240 && blue > 240) {
            non_background += 1;
        }
        // --accent #1c64d9 (the curves), --now #d9480f (the current point).
        if red.abs_diff(0x1c) < 24 && green.abs_diff(0x64) < 24 && blue.abs_diff(0xd9) < 24 {
            curve_blue += 1;
        }
        if red.abs_diff(0xd9) < 24 && green.abs_diff(0x48) < 24 && blue.abs_diff(0x0f) < 24 {
            current_orange += 1;
        }
    }
    let total = pixels.len() / channels;
    assert!(
        non_background * 20 > total,
        "screenshot nearly blank: {non_background} of {total} pixels drawn"
    );
    assert!(
        colours.len() > 50,
        "only {} colours: nothing rendered",
        colours.len()
    );
    assert!(
        curve_blue > 2000,
        "curve colour on {curve_blue} pixels: charts not drawn"
    );
    assert!(
        current_orange > 100,
        "current-point colour on {current_orange} pixels"
    );
}

/// The body of the kernel table (the page has other tables above it).
fn kernel_table_body(dom: &str) -> &str {
    dom.split("<table class=\"kernels\"")
        .nth(1)
        .and_then(|rest| rest.split("<tbody>").nth(1))
        .and_then(|rest| rest.split("</tbody>").next())
        .unwrap_or("")
}

/// The sort keys of one column of the kernel table, in DOM order: a cell's `data-sort`, or its
/// text when it sorts as itself (what the page's script sorts by).
fn column_values(dom: &str, column: usize) -> Vec<String> {
    kernel_table_body(dom)
        .split("<tr")
        .skip(1)
        .map(|row| {
            let cell = row.split("<td").nth(column + 1).unwrap_or("");
            let tag = cell.split('>').next().unwrap_or("");
            match tag.split("data-sort=\"").nth(1) {
                Some(rest) => rest.split('"').next().unwrap_or("").to_string(),
                None => cell
                    .split_once('>')
                    .and_then(|(_, text)| text.split('<').next())
                    .unwrap_or("")
                    .to_string(),
            }
        })
        .collect()
}

#[test]
fn the_table_sorts_in_the_browser_from_the_link() {
    let report = example_report();
    let page = artifacts().join("report-sorted.html");
    std::fs::write(&page, render_html(&report, "example workspace")).unwrap();
    // Columns: crate, kernel, arch, block, regs, ...
    let registers_column = 4;
    let unsorted = run_chromium(&page, &["--dump-dom"], "profile-unsorted");
    let before: Vec<f64> =
        column_values(&String::from_utf8_lossy(&unsorted.stdout), registers_column)
            .iter()
            .map(|value| value.parse().unwrap())
            .collect();
    assert_eq!(before.len(), report.kernels.len());
    let output = run_chromium_at(&page, "#sort=-registers", &["--dump-dom"], "profile-sorted");
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let console = console_lines(&output);
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    let dom = String::from_utf8_lossy(&output.stdout).into_owned();
    let after: Vec<f64> = column_values(&dom, registers_column)
        .iter()
        .map(|value| value.parse().unwrap())
        .collect();
    let mut expected = before.clone();
    expected.sort_by(|a, b| b.total_cmp(a));
    assert_ne!(
        before, expected,
        "the example must start unsorted for this test to mean anything"
    );
    assert_eq!(
        after, expected,
        "rows sorted by registers, descending, by the page's script"
    );
    assert!(
        dom.contains("data-column=\"registers\" aria-sort=\"descending\""),
        "header marked"
    );
}

#[test]
fn the_table_filters_in_the_browser_from_the_link() {
    let report = example_report();
    let page = artifacts().join("report-filtered.html");
    std::fs::write(&page, render_html(&report, "example workspace")).unwrap();
    let output = run_chromium_at(
        &page,
        "#filter=sm_90%20gemm-kernels&sort=kernel",
        &["--dump-dom"],
        "profile-filtered",
    );
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let console = console_lines(&output);
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    let dom = String::from_utf8_lossy(&output.stdout).into_owned();
    let rows: Vec<&str> = kernel_table_body(&dom).split("<tr").skip(1).collect();
    let visible: Vec<&&str> = rows
        .iter()
        .filter(|row| !row.split('>').next().unwrap_or("").contains("hidden"))
        .collect();
    let expected = report
        .kernels
        .iter()
        .filter(|row| row.arch == "sm_90" && row.crate_name.as_deref() == Some("gemm-kernels"))
        .count();
    assert_eq!(rows.len(), report.kernels.len());
    assert_eq!(visible.len(), expected, "visible rows: {visible:?}");
    assert!(visible
        .iter()
        .all(|row| row.contains("sm_90") && row.contains("gemm-kernels")));
    assert!(
        dom.contains(&format!("{expected} of {} rows", report.kernels.len())),
        "row count shown"
    );
}

// ---- a large report: a candle-sized crate of C++ template kernels -------------------------

use occupancy_core::lint::{Level, LintId};
use occupancy_core::report::{Finding, KernelRow, Location, LocationKind, Report};

/// A deterministic generator (a 64-bit LCG with Knuth's constants): the same report every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }

    fn range(&mut self, low: u32, high: u32) -> u32 {
        low + (self.next() % u64::from(high - low + 1)) as u32
    }
}

/// A kernel family: namespace, kernel names, mangled parameters, and what its kernels use.
struct Family {
    namespace: &'static str,
    names: &'static [&'static str],
    parameters: &'static str,
    registers: (u32, u32),
    smem_kib: (u32, u32),
    blocks: &'static [u32],
}

const FAMILIES: [Family; 7] = [
    Family {
        namespace: "unary",
        names: &[
            "uexp",
            "ulog",
            "usin",
            "ucos",
            "utanh",
            "ugelu_erf",
            "usilu",
            "urelu",
            "usqrt",
            "uneg",
        ],
        parameters: "mmPKmPKvPv",
        registers: (14, 30),
        smem_kib: (0, 0),
        blocks: &[256],
    },
    Family {
        namespace: "binary",
        names: &["badd", "bsub", "bmul", "bdiv", "bmaximum", "bminimum"],
        parameters: "mmPKmPKvPv",
        registers: (16, 32),
        smem_kib: (0, 0),
        blocks: &[256],
    },
    Family {
        namespace: "reduce",
        names: &[
            "fast_sum",
            "fast_max",
            "fast_argmax",
            "softmax",
            "layernorm",
            "rmsnorm",
        ],
        parameters: "PKvPvmm",
        // At most 56 on sm_90: a 1024-thread block stays launchable.
        registers: (30, 48),
        smem_kib: (1, 8),
        blocks: &[256, 512, 1024],
    },
    Family {
        namespace: "quantized",
        names: &[
            "mul_mat_vec_q",
            "mul_mat_q",
            "dequantize_block",
            "quantize_q8_1",
        ],
        parameters: "PKvPvmii",
        registers: (56, 168),
        smem_kib: (0, 24),
        blocks: &[128, 256],
    },
    Family {
        namespace: "flash_attn",
        names: &[
            "flash_fwd_kernel",
            "flash_fwd_splitkv_kernel",
            "flash_bwd_dq_dk_dv_loop_kernel",
        ],
        parameters: "PKvPvmii",
        registers: (128, 255),
        smem_kib: (32, 96),
        blocks: &[128, 256],
    },
    Family {
        namespace: "conv",
        names: &[
            "conv2d",
            "conv_transpose2d",
            "im2col",
            "col2im",
            "avg_pool2d",
        ],
        parameters: "PKvPvPKmm",
        registers: (32, 96),
        smem_kib: (0, 4),
        blocks: &[256],
    },
    Family {
        namespace: "gemm",
        names: &["sgemm_tiled", "hgemm_wmma", "gemv_split_k"],
        parameters: "iiiPKvPv",
        registers: (96, 200),
        smem_kib: (16, 64),
        blocks: &[128, 256],
    },
];

const TYPES: [&str; 4] = ["f", "d", "6__half", "13__nv_bfloat16"];
const BLOCK_TYPES: [&str; 4] = [
    "10block_q4_0",
    "10block_q4_K",
    "10block_q6_K",
    "10block_q8_0",
];

/// `_ZN6candle5unary4uexpI6__halfLi256EEEvmmPKmPKvPv`: a function template in two namespaces
/// with a type and integer arguments, as nvcc mangles it.
fn mangled(family: &Family, name: &str, type_arg: &str, numbers: &[u32]) -> String {
    let mut arguments = type_arg.to_string();
    for number in numbers {
        arguments.push_str(&format!("Li{number}E"));
    }
    format!(
        "_ZN6candle{}{}{}{}I{arguments}EEv{}",
        family.namespace.len(),
        family.namespace,
        name.len(),
        name,
        family.parameters
    )
}

fn location(kind: LocationKind, path: &str, line: u32) -> Location {
    Location {
        kind,
        path: path.to_string(),
        line,
        column: 1,
    }
}

/// The rows of one kernel on sm_80 and sm_90 (ptxas gives sm_90 a few registers more or less).
fn kernel_rows(random: &mut Lcg, index: usize) -> Vec<KernelRow> {
    let family = &FAMILIES[index % FAMILIES.len()];
    let name = family.names[(index / FAMILIES.len()) % family.names.len()];
    let type_arg = if family.namespace == "quantized" {
        random.pick(&BLOCK_TYPES)
    } else {
        random.pick(&TYPES)
    };
    let numbers = [random.pick(&[32, 64, 128, 256]), (index / 40) as u32 + 1];
    let symbol = mangled(family, name, type_arg, &numbers);
    let demangled = occupancy_core::ptxas::demangle(&symbol)
        .unwrap_or_else(|| panic!("{symbol} does not demangle"));
    let registers = random.range(family.registers.0, family.registers.1);
    let smem = u64::from(random.range(family.smem_kib.0, family.smem_kib.1)) * 1024;
    let block = random.pick(family.blocks);
    // Kernels near 255 registers spill, and about one in 50 of those above 64.
    let spill = if registers >= 250 || (index % 50 == 7 && registers >= 64) {
        u64::from(random.range(2, 150)) * 4
    } else {
        0
    };
    let line = 20 + (index as u32 * 37) % 2000;
    ["sm_80", "sm_90"]
        .iter()
        .enumerate()
        .map(|(second, arch)| {
            // ptxas spills a little less for sm_90 in this crate.
            let spilled = spill * (4 - second as u64) / 4;
            let mut row = KernelRow {
                crate_name: Some("candle-kernels".to_string()),
                demangled: demangled.clone(),
                ptx_target: Some("compute_80".to_string()),
                registers: (registers + second as u32 * random.range(0, 8)).min(255),
                static_smem_bytes: smem,
                stack_frame_bytes: spill + if index % 62 == 3 { 32 } else { 0 },
                spill_store_bytes: spilled / 2,
                spill_load_bytes: spilled / 2,
                source: Some(location(
                    LocationKind::CudaKernel,
                    &format!("candle-kernels/src/{}.cu", family.namespace),
                    line,
                )),
                ..KernelRow::new(&symbol, arch, block)
            };
            row.compute(occupancy_core::arch::lookup(arch).unwrap());
            row
        })
        .collect()
}

/// What the SASS stage records for a kernel that spills in a loop.
fn spilling_sass(row: &KernelRow) -> occupancy_core::sass::SassFacts {
    let file = row
        .source
        .as_ref()
        .map_or("k.cu", |source| source.path.as_str());
    let line = row.source.as_ref().map_or(1, |source| source.line);
    let spills = (row.spill_store_bytes / 4).max(1);
    serde_json::from_value(serde_json::json!({
        "kernel": row.name, "arch": row.arch, "instructions": 2400,
        "local_loads_by_width": {"32": spills}, "local_stores_by_width": {"32": spills},
        "spill_loads": spills, "spill_stores": spills,
        "spill_loads_in_loops": spills / 2, "spill_stores_in_loops": spills / 2,
        "spill_store_bytes": spills * 4, "local_array_accesses": 0, "stack_data_accesses": 0,
        "loops": [{"header_offset": 512, "depth": 1, "parent": null, "file": file, "line": line + 14,
                   "instructions": 310, "local_loads": spills / 2, "local_stores": spills / 2,
                   "spill_loads": spills / 2, "spill_stores": spills / 2,
                   "local_array_accesses": 0, "calls": 0}],
        "lines": [{"file": file, "line": line + 21, "kind": "spill", "loads": spills / 2,
                   "stores": spills / 2, "loop_depth": 1}],
        "calls": [], "fp64_instructions": 0, "setmaxnreg": [], "indirect_branches": 0
    }))
    .expect("SASS facts")
}

fn finding(row: &KernelRow, lint: LintId, level: Level, message: String) -> Finding {
    Finding {
        lint,
        level,
        crate_name: row.crate_name.clone(),
        kernel: Some(row.name.clone()),
        arch: Some(row.arch.clone()),
        message,
        notes: vec![format!(
            "ptxas reported for {} on {}: {} registers, {} bytes stack frame, {} bytes spill stores, {} bytes spill loads",
            row.demangled, row.arch, row.registers, row.stack_frame_bytes, row.spill_store_bytes, row.spill_load_bytes
        )],
        help: Some("give ptxas more registers (a lower minimum blocks per SM in `__launch_bounds__`, or a higher `-maxrregcount`), or reduce live values".to_string()),
        location: row.source.clone(),
        reason: None,
    }
}

/// The findings a build would make of these rows: spills (deny for the first few, as declared
/// kernels; the rest are undeclared and warn), stack frames, cliffs, low occupancy, and the
/// baseline's regressions and stale entries.
fn findings_of(rows: &[KernelRow]) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut denied = 0;
    for (index, row) in rows.iter().enumerate() {
        let short = row.demangled.split('(').next().unwrap_or("");
        if row.spill_bytes() > 0 {
            let level = if denied < 6 { Level::Deny } else { Level::Warn };
            denied += usize::from(level == Level::Deny);
            findings.push(finding(row, LintId::Spills, level, format!(
                "kernel `{short}` spills {} bytes to local memory on {} ({} stores + {} loads; at most 0 allowed)",
                row.spill_bytes(), row.arch, row.spill_store_bytes, row.spill_load_bytes)));
        } else if row.stack_frame_bytes > 0 {
            findings.push(finding(
                row,
                LintId::StackFrame,
                Level::Warn,
                format!(
                    "kernel `{short}` has a {}-byte stack frame on {} (at most 0 allowed)",
                    row.stack_frame_bytes, row.arch
                ),
            ));
        }
        if row.headroom.spare_registers_per_thread == Some(0) && index % 3 == 0 {
            findings.push(finding(row, LintId::OccupancyCliff, Level::Warn, format!(
                "kernel `{short}` is 1 register from losing a block on {} ({} registers: {} blocks instead of {})",
                row.arch, row.registers + 1, row.blocks_per_sm.saturating_sub(1), row.blocks_per_sm)));
        }
        if row.occupancy < 0.2 && index % 12 == 1 {
            findings.push(finding(
                row,
                LintId::LowOccupancy,
                Level::Warn,
                format!(
                    "kernel `{short}` reaches {:.1}% occupancy on {}, below min_occupancy = 0.25",
                    row.occupancy * 100.0,
                    row.arch
                ),
            ));
        }
        if index % 300 == 11 && row.arch == "sm_90" {
            let mut regression = finding(
                row,
                LintId::Regression,
                Level::Deny,
                format!(
                    "kernel `{}` is worse than the baseline on {}",
                    row.name, row.arch
                ),
            );
            regression.notes = vec![
                format!("registers: {} -> {}", row.registers.saturating_sub(8), row.registers),
                "cause: the source or the declaration changed (the toolchain is the baseline's: nvcc 13.0.88, ptxas 13.0.88, the same flags)".to_string(),
            ];
            findings.push(regression);
        } else if index % 61 == 5 {
            let mut stale = finding(
                row,
                LintId::BaselineStale,
                Level::Warn,
                format!(
                    "kernel `{}` is better than the baseline on {}",
                    row.name, row.arch
                ),
            );
            stale.notes = vec![format!(
                "registers: {} -> {}",
                row.registers + 8,
                row.registers
            )];
            findings.push(stale);
        }
    }
    findings
}

/// `kernels` C++ template kernels on sm_80 and sm_90, with their findings.
fn large_report(kernels: usize) -> Report {
    let mut random = Lcg(0x5eed);
    let mut rows: Vec<KernelRow> = (0..kernels)
        .flat_map(|index| kernel_rows(&mut random, index))
        .collect();
    for row in rows.iter_mut().filter(|row| row.spill_bytes() > 0) {
        row.sass = Some(spilling_sass(row));
    }
    Report {
        crate_name: Some("candle-kernels".to_string()),
        findings: findings_of(&rows),
        kernels: rows,
        ..Report::default()
    }
}

/// A page that shows `report` (a file beside it, with a fragment) in a 1400 px wide frame and,
/// once it has loaded, writes where things are into `<pre id="layout">`. Chromium's headless
/// `--screenshot` paints a scrolled page blank, and a frame scrolled inside a page does not,
/// so screenshots of a scrolled report are taken through a frame too.
fn harness(report: &str, width: u32, height: u32) -> String {
    format!(
        r##"<!DOCTYPE html><html><body style="margin:0">
<iframe id="report" src="{report}" width="{width}" height="{height}" style="border:0;display:block"></iframe>
<script>
document.getElementById("report").addEventListener("load", function () {{
  var doc = this.contentDocument;
  function box(selector) {{
    var node = doc.querySelector(selector);
    if (!node) {{ return null; }}
    var rect = node.getBoundingClientRect();
    return {{ left: rect.left, right: rect.right, top: rect.top, bottom: rect.bottom }};
  }}
  var names = Array.prototype.map.call(doc.querySelectorAll("#kernels td.name a.k"), function (link) {{
    return link.getBoundingClientRect().height;
  }});
  var layout = {{
    width: doc.documentElement.clientWidth,
    scroll_width: doc.documentElement.scrollWidth,
    findings_header: box('th[data-column="findings"]'),
    findings_cell: box("#kernels tbody tr td:last-child"),
    by_lint: box("#by-lint"),
    attention: box("#attention"),
    table: box("#kernels"),
    tallest_name: Math.max.apply(null, names),
    name_line: parseFloat(getComputedStyle(doc.querySelector("a.k")).lineHeight)
  }};
  var out = document.createElement("pre");
  out.id = "layout";
  out.textContent = JSON.stringify(layout);
  document.body.appendChild(out);
}});
</script></body></html>"##
    )
}

/// Pixels of a PNG near `colour` (each channel within 24).
fn pixels_near(path: &Path, colour: (u8, u8, u8)) -> (usize, usize, (u32, u32)) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(path).expect("screenshot written"),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).unwrap();
    let channels = info.color_type.samples();
    let pixels = &pixels[..info.buffer_size()];
    let mut near = 0;
    let mut drawn = 0;
    for pixel in pixels.chunks(channels) {
        let (red, green, blue) = (pixel[0], pixel[1], pixel[2]);
        // White and the page's #f5f6f8 are background.
        if !(red > 240 && green > 240 && blue > 240) {
            drawn += 1;
        }
        if red.abs_diff(colour.0) < 24
            && green.abs_diff(colour.1) < 24
            && blue.abs_diff(colour.2) < 24
        {
            near += 1;
        }
    }
    (near, drawn, (info.width, info.height))
}

/// The size of the page for a candle-sized crate (#22.6: 15.7 MB for 1,346 rows), and how it
/// grows: linearly, by about half a kilobyte a row.
#[test]
fn a_large_report_stays_a_few_megabytes_growing_linearly() {
    let report = large_report(700);
    assert_eq!(report.kernels.len(), 1400);
    let shown = report.shown_findings().count();
    assert!(
        (100..=250).contains(&shown),
        "{shown} findings: a few dozen errors and warnings per lint"
    );
    // The report as a build writes it, for measuring any version's page:
    // `cargo occupancy report --dir target/tmp/report-html/large --html large.html`.
    let dir = artifacts().join("large");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("candle-kernels.json"),
        occupancy_core::report::render_json(&report),
    )
    .unwrap();
    let full = render_html(&report, "candle-kernels").len();
    let half = render_html(&large_report(350), "candle-kernels").len();
    assert!(full < 2_000_000, "{full} bytes for 1400 rows");
    let per_row = (full - half) / 700;
    assert!(
        per_row < 1_000,
        "{per_row} bytes per added row ({half} -> {full})"
    );
    assert!(
        full * 10 < half * 22,
        "not linear: {half} bytes for 700 rows, {full} for 1400"
    );
}

#[test]
fn a_large_report_leads_with_what_needs_attention() {
    let report = large_report(700);
    let page = artifacts().join("large-report.html");
    std::fs::write(&page, render_html(&report, "candle-kernels")).unwrap();
    let output = run_chromium(
        &page,
        &["--dump-dom", "--window-size=1400,900"],
        "profile-large-dom",
    );
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let console = console_lines(&output);
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    let dom = String::from_utf8_lossy(&output.stdout).into_owned();
    std::fs::write(artifacts().join("large-report.dom.html"), &dom).unwrap();
    // The summary comes first, the table of every row after it.
    let attention = dom.find("id=\"attention\"").expect("the summary section");
    let table = dom.find("id=\"all-kernels\"").expect("the table section");
    assert!(attention < table);
    assert_eq!(dom.matches("<tr id=\"k").count(), report.kernels.len());
    let summary = &dom[attention..table];
    // Findings by lint: every lint with findings, with its counts.
    for lint in [
        LintId::Spills,
        LintId::StackFrame,
        LintId::OccupancyCliff,
        LintId::Regression,
        LintId::BaselineStale,
    ] {
        let count = report
            .findings
            .iter()
            .filter(|finding| finding.lint == lint)
            .count();
        assert!(count > 0, "the generator makes {lint} findings");
        assert!(
            summary.contains(&format!("href=\"#lint-{lint}\">{lint}</a>")),
            "{lint} in the summary"
        );
    }
    assert!(summary.contains("6 deny"), "the spills lint's deny count");
    // The kernel that spills most is named first under "Most spills", linked to its row.
    let worst = (0..report.kernels.len())
        .max_by_key(|&row| (report.kernels[row].spill_bytes(), std::cmp::Reverse(row)))
        .unwrap();
    let spills = summary
        .split("id=\"most-spills\"")
        .nth(1)
        .expect("most spills card");
    let first_link = spills
        .split("href=\"#k")
        .nth(1)
        .and_then(|rest| rest.split('"').next());
    let worst_kernel = &report.kernels[worst];
    let first_row = first_link
        .and_then(|id| id.parse::<usize>().ok())
        .map(|row| &report.kernels[row]);
    assert_eq!(
        first_row.map(|row| (&row.name, row.spill_bytes())),
        Some((&worst_kernel.name, worst_kernel.spill_bytes()))
    );
    // An occupancy histogram per arch, and the baseline's changes.
    for arch in ["sm_80", "sm_90"] {
        assert!(
            summary.contains(&format!("<figure class=\"hist\" data-arch=\"{arch}\">")),
            "{arch} histogram"
        );
    }
    let baseline = summary
        .split("id=\"baseline\"")
        .nth(1)
        .expect("baseline card");
    assert!(
        baseline.contains(">worse<") && baseline.contains(">stale<"),
        "{baseline}"
    );
    // Names are demangled in the text.
    assert!(
        dom.contains("candle::flash_attn::flash_fwd_kernel&lt;"),
        "demangled names"
    );
}

/// At 1400 x 900 the summary is on the first screen, the findings column is on screen (nothing
/// scrolls sideways), and long template names take at most two lines.
#[test]
fn a_large_report_fits_1400_pixels() {
    let page = artifacts().join("large-report-layout.html");
    std::fs::write(&page, render_html(&large_report(700), "candle-kernels")).unwrap();
    std::fs::write(
        artifacts().join("large-layout.html"),
        harness("large-report-layout.html", 1400, 900),
    )
    .unwrap();
    let output = run_chromium(
        &artifacts().join("large-layout.html"),
        &[
            "--dump-dom",
            "--window-size=1400,900",
            "--allow-file-access-from-files",
        ],
        "profile-large-layout",
    );
    let dom = String::from_utf8_lossy(&output.stdout).into_owned();
    let layout = dom
        .split("<pre id=\"layout\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "no layout measured: {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    let layout: serde_json::Value = serde_json::from_str(layout).unwrap();
    let width = layout["width"].as_f64().unwrap();
    assert!(width >= 1380.0, "{layout}");
    assert!(
        layout["scroll_width"].as_f64().unwrap() <= width,
        "the page scrolls sideways: {layout}"
    );
    for edge in ["findings_header", "findings_cell"] {
        assert!(
            layout[edge]["right"].as_f64().unwrap() <= width,
            "{edge} off screen: {layout}"
        );
    }
    assert!(
        layout["by_lint"]["top"].as_f64().unwrap() < 120.0,
        "findings by lint lead: {layout}"
    );
    assert!(
        layout["attention"]["bottom"].as_f64().unwrap() < layout["table"]["top"].as_f64().unwrap()
    );
    let line = layout["name_line"].as_f64().unwrap();
    assert!(
        layout["tallest_name"].as_f64().unwrap() <= 2.0 * line + 1.0,
        "a name over two lines: {layout}"
    );
}

/// The first screen of a large report, as a person opens it: kept as
/// `target/tmp/report-html/large-report.png`.
#[test]
fn a_large_report_first_screen_shows_the_summary() {
    let page = artifacts().join("large-report-screen.html");
    std::fs::write(&page, render_html(&large_report(700), "candle-kernels")).unwrap();
    let screenshot = artifacts().join("large-report.png");
    let _ = std::fs::remove_file(&screenshot);
    let output = run_chromium(
        &page,
        &[
            "--window-size=1400,900",
            &format!("--screenshot={}", screenshot.display()),
        ],
        "profile-large-screenshot",
    );
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // --bad #c92a2a (deny counts, lint bars), --accent #1c64d9 (histograms, links).
    let (red, drawn, size) = pixels_near(&screenshot, (0xc9, 0x2a, 0x2a));
    let (blue, _, _) = pixels_near(&screenshot, (0x1c, 0x64, 0xd9));
    assert_eq!(size, (1400, 900));
    assert!(
        drawn * 10 > 1400 * 900,
        "screenshot nearly blank: {drawn} pixels drawn"
    );
    assert!(red > 200, "deny colour on {red} pixels");
    assert!(blue > 3000, "histogram and link colour on {blue} pixels");
}

/// A kernel linked from the summary opens with its details: facts, findings, loop nest and the
/// three charts.
#[test]
fn a_linked_kernel_of_a_large_report_opens_with_its_charts() {
    let report = large_report(700);
    let page = artifacts().join("large-report-linked.html");
    std::fs::write(&page, render_html(&report, "candle-kernels")).unwrap();
    let worst = (0..report.kernels.len())
        .max_by_key(|&row| (report.kernels[row].spill_bytes(), std::cmp::Reverse(row)))
        .unwrap();
    let output = run_chromium_at(
        &page,
        &format!("#k{worst}"),
        &["--dump-dom"],
        "profile-large-linked",
    );
    let console = console_lines(&output);
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    let dom = String::from_utf8_lossy(&output.stdout).into_owned();
    let detail = dom
        .split(&format!("<tr id=\"k{worst}\""))
        .nth(1)
        .and_then(|rest| rest.split("<tr class=\"detail\"").nth(1))
        .and_then(|rest| rest.split("<tr id=\"k").next())
        .expect("the row's details follow it");
    assert_eq!(detail.matches("<svg class=\"chart\"").count(), 3);
    assert_eq!(detail.matches("class=\"curve\"").count(), 3);
    assert_eq!(detail.matches("<circle class=\"now\"").count(), 3);
    assert!(
        detail.contains("deny[spills]") || detail.contains("warn[spills]"),
        "its findings"
    );
    assert!(detail.contains("<table class=\"loops\">"), "its loop nest");
    assert!(
        detail.contains(&report.kernels[worst].name),
        "the mangled symbol"
    );

    // Seen through a frame (a scrolled page screenshots blank), at 1400 x 900.
    std::fs::write(
        artifacts().join("large-linked.html"),
        harness(&format!("large-report-linked.html#k{worst}"), 1400, 900),
    )
    .unwrap();
    let screenshot = artifacts().join("large-report-linked.png");
    let _ = std::fs::remove_file(&screenshot);
    let output = run_chromium(
        &artifacts().join("large-linked.html"),
        &[
            "--window-size=1400,900",
            &format!("--screenshot={}", screenshot.display()),
        ],
        "profile-large-linked-screenshot",
    );
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (curve, drawn, _) = pixels_near(&screenshot, (0x1c, 0x64, 0xd9));
    let (now, _, _) = pixels_near(&screenshot, (0xd9, 0x48, 0x0f));
    assert!(
        drawn * 10 > 1400 * 900,
        "screenshot nearly blank: {drawn} pixels drawn"
    );
    // Three 2-pixel curves across 320-pixel plots, low (this kernel is at 12.5%).
    assert!(
        curve > 800,
        "curve colour on {curve} pixels: charts not drawn"
    );
    assert!(now > 100, "current-point colour on {now} pixels");
}
