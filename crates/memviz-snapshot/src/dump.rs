//! A deterministic text dump of the whole model, with strings resolved: for tests (chunking
//! equality, golden files) and debugging.

use crate::model::*;
use std::fmt::Write;

impl Snapshot {
    pub fn dump(&self) -> String {
        let mut o = String::new();
        let _ = self.dump_into(&mut o);
        o
    }

    fn stack_text(&self, id: StackId) -> String {
        let parts: Vec<String> = self
            .stack(id)
            .iter()
            .filter_map(|f| self.frame(*f))
            .map(|f| {
                let mut s = format!("{}:{}:{}", self.str(f.filename), f.line, self.str(f.name));
                if f.fx_node_op != NO_STR || f.fx_node_name != NO_STR {
                    s.push_str(&format!(
                        " fx({},{},{})",
                        self.str(f.fx_node_op),
                        self.str(f.fx_node_name),
                        self.str(f.fx_node_target)
                    ));
                }
                s
            })
            .collect();
        format!("[{}]", parts.join(" | "))
    }

    fn dump_into(&self, o: &mut String) -> std::fmt::Result {
        writeln!(o, "layout {:?} protocol {}", self.layout, self.protocol)?;
        for s in &self.segments {
            writeln!(
                o,
                "segment dev{} 0x{:x} total {} alloc {} active {} req {} stream {} type {} pool {:?} exp {} stack {}",
                s.device, s.address, s.total_size, s.allocated_size, s.active_size, s.requested_size, s.stream,
                self.str(s.segment_type), s.pool_id, s.is_expandable, self.stack_text(s.stack)
            )?;
            for b in self.segment_blocks(s) {
                writeln!(
                    o,
                    "  block 0x{:x} size {} req {} {:?} stack {}",
                    b.address,
                    b.size,
                    b.requested_size,
                    b.state,
                    self.stack_text(b.stack)
                )?;
                for h in self
                    .history
                    .get(b.history.0 as usize..b.history.1 as usize)
                    .unwrap_or(&[])
                {
                    writeln!(
                        o,
                        "    history 0x{:x} {} {}",
                        h.addr,
                        h.real_size,
                        self.stack_text(h.stack)
                    )?;
                }
            }
        }
        for (d, t) in self.traces.iter().enumerate() {
            writeln!(o, "trace {d}: {} events", t.len())?;
            for i in 0..t.len() {
                write!(
                    o,
                    "  {} {} 0x{:x} {} s{}",
                    i,
                    self.action_name(t.action(i).unwrap_or(Action::Unknown(UnknownAction(0)))),
                    t.addr(i).unwrap_or(0),
                    t.size(i).unwrap_or(0),
                    t.stream.get(i).unwrap_or(0)
                )?;
                if let Some(ts) = t.time_us(i) {
                    write!(o, " t{ts}")?;
                }
                if let Some(c) = t.compile_context.get(i).filter(|c| *c != NO_STR) {
                    write!(o, " cc={:?}", self.str(c))?;
                }
                if let Some(u) = t.user_metadata.get(i).filter(|u| *u != NO_STR) {
                    write!(o, " um={:?}", self.str(u))?;
                }
                if let Some(df) = t.device_free_of(i as u32) {
                    write!(o, " device_free={df}")?;
                }
                writeln!(
                    o,
                    " {}",
                    self.stack_text(t.stack(i).unwrap_or(StackId::EMPTY))
                )?;
            }
        }
        for a in &self.external_annotations {
            writeln!(
                o,
                "annotation {:?} {:?} dev{} t{}",
                self.str(a.name),
                self.str(a.stage),
                a.device,
                a.time_us
            )?;
        }
        if let Some(s) = &self.allocator_settings {
            writeln!(o, "settings {s}")?;
        }
        for (k, v) in &self.extra {
            writeln!(o, "extra {k} {v}")?;
        }
        for w in &self.warnings {
            writeln!(o, "warning {w}")?;
        }
        Ok(())
    }
}
