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
