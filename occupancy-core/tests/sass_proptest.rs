//! Property tests of the SASS reader: a random structured program (straight code, local loads
//! and stores of every width, nested loops closed by predicated backward branches, forward
//! skips) rendered as nvdisasm prints it must read back with exactly the counts it was built
//! with; and no text makes the reader panic.

use occupancy_core::sass::{analyze, parse_nvdisasm};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Node {
    Plain,
    Load(u8),
    Store(u8),
    Skip(Vec<Node>),
    Loop(Vec<Node>),
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        Just(Node::Plain),
        (0u8..5).prop_map(Node::Load),
        (0u8..5).prop_map(Node::Store),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..6).prop_map(Node::Loop),
            prop::collection::vec(inner, 1..6).prop_map(Node::Skip),
        ]
    })
}

const WIDTHS: [(&str, u32); 5] = [("U8", 8), ("S16", 16), ("", 32), ("64", 64), ("128", 128)];

#[derive(Default)]
struct Expected {
    instructions: u32,
    loads_in_loops: u32,
    stores_in_loops: u32,
    loops: Vec<u32>, // depth of each loop
    stores_by_width: std::collections::BTreeMap<u32, u32>,
}

struct Render {
    text: String,
    offset: u64,
    labels: u32,
}

impl Render {
    fn instruction(&mut self, predicate: &str, body: &str) {
        self.text.push_str(&format!(
            "        /*{:04x}*/ {predicate:>8} {body} ;\n",
            self.offset
        ));
        self.offset += 16;
    }

    fn access(&mut self, opcode: &str, width: u8, store: bool) -> u32 {
        let (modifier, bits) = WIDTHS[usize::from(width)];
        let mnemonic = if modifier.is_empty() {
            opcode.to_owned()
        } else {
            format!("{opcode}.{modifier}")
        };
        let body = if store {
            format!("{mnemonic} [R1+0x{:x}], R2", self.offset)
        } else {
            format!("{mnemonic} R2, [R1+0x{:x}]", self.offset)
        };
        self.instruction("", &body);
        bits
    }

    fn nodes(&mut self, nodes: &[Node], depth: u32, expected: &mut Expected) {
        for node in nodes {
            match node {
                Node::Plain => self.instruction("", "IADD3 R0, R0, 0x1, RZ"),
                Node::Load(width) => {
                    self.access("LDL", *width, false);
                    expected.loads_in_loops += u32::from(depth > 0);
                }
                Node::Store(width) => {
                    let bits = self.access("STL", *width, true);
                    *expected.stores_by_width.entry(bits).or_default() += 1;
                    expected.stores_in_loops += u32::from(depth > 0);
                }
                Node::Skip(body) => {
                    self.labels += 1;
                    let label = format!(".L_x_{}", self.labels);
                    self.instruction("@P1", &format!("BRA `({label})"));
                    self.nodes(body, depth, expected);
                    self.text.push_str(&format!("{label}:\n"));
                }
                Node::Loop(body) => {
                    self.labels += 1;
                    let label = format!(".L_x_{}", self.labels);
                    expected.loops.push(depth + 1);
                    self.text.push_str(&format!("{label}:\n"));
                    self.instruction("", "NOP");
                    self.nodes(body, depth + 1, expected);
                    self.instruction("@P0", &format!("BRA `({label})"));
                }
            }
        }
    }
}

fn render(program: &[Node]) -> (String, Expected) {
    let mut render = Render {
        text: "\t.target\tsm_90\n\t.section\t.text.k,\"ax\",@progbits\n        .other k,@\"STO_CUDA_ENTRY STV_DEFAULT\"\nk:\n".to_owned(),
        offset: 0,
        labels: 0,
    };
    let mut expected = Expected::default();
    render.nodes(program, 0, &mut expected);
    render.instruction("", "EXIT");
    render.text.push_str(".L_x_0:\n");
    render.instruction("", "BRA `(.L_x_0)");
    expected.instructions = (render.offset / 16) as u32;
    (render.text, expected)
}

proptest! {
    #[test]
    fn structured_programs_read_back_exactly(program in prop::collection::vec(node(), 1..8)) {
        let (text, expected) = render(&program);
        let facts = analyze(&text, |_| true).unwrap();
        prop_assert_eq!(facts.len(), 1);
        let facts = &facts[0];
        prop_assert_eq!(facts.instructions, expected.instructions);
        prop_assert_eq!(facts.spill_loads_in_loops, expected.loads_in_loops);
        prop_assert_eq!(facts.spill_stores_in_loops, expected.stores_in_loops);
        prop_assert_eq!(&facts.local_stores_by_width, &expected.stores_by_width);
        let mut depths: Vec<u32> = facts.loops.iter().map(|found| found.depth).collect();
        let mut expected_depths = expected.loops.clone();
        depths.sort_unstable();
        expected_depths.sort_unstable();
        prop_assert_eq!(depths, expected_depths);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(\\PC{0,40}\n){0,20}") {
        let _ = parse_nvdisasm(&text);
        let _ = analyze(&text, |_| false);
    }

    #[test]
    fn instruction_shaped_noise_never_panics(
        lines in prop::collection::vec("        /\\*[0-9a-f]{1,4}\\*/ +(@!?P[0-7T] )?[A-Z]{1,5}(\\.[A-Z0-9]{1,3})? [A-Z0-9\\[\\]+`(.)_, ]{0,20} ;", 0..20)
    ) {
        let text = format!("\t.section\t.text.k,\"ax\"\n        .other k,@\"STO_CUDA_ENTRY\"\nk:\n{}\n", lines.join("\n"));
        let _ = analyze(&text, |_| true);
    }
}
