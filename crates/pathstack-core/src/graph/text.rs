//! The text form of a module graph: Scout's `config.graph` (thesis §3.2.3)
//! extended with instance parameters and comments: the graph's text front
//! end ([`ModuleGraph::from_text`], [`ModuleGraph::from_file`],
//! [`ModuleGraph::to_text`]), beside the Rust one ([`GraphBuilder`]).
//!
//! ```text
//! # comment to end of line
//! name=wire0 module=DRIVER device=0;   # instance: key=value pairs, then `;`
//! module=ECHO;                        # name defaults to the module name
//! @                                   # declarations end, connections follow
//! ECHO.<down<>wire0.up;               # `<`: ECHO is initialized after wire0
//! ```
//!
//! Parameter values are bare words (anything but whitespace and `;#="@`) or
//! double-quoted strings with `\"`, `\\` and `\n` escapes.
//!
//! The grammar is eight productions; it is hand-written rather than built
//! on a parser crate so that it can report every error with its line and
//! resume at the next `;`, and so that the core crate keeps its small
//! dependency set.

use std::fmt::Write as _;
use std::path::Path;

use super::builder::{is_name_char, GraphBuilder, ServiceRef};
use super::error::{GraphError, GraphErrorKind, GraphErrors, Location};
use super::module_graph::ModuleGraph;
use super::spec::SpecRegistry;

/// Parses `text` into `builder` calls. Returns the syntax errors, if any; in
/// that case nothing is checked further, as later errors would mostly echo
/// the broken statements.
pub(super) fn parse_into(
    text: &str,
    file: Option<&str>,
    builder: &mut GraphBuilder<'_>,
) -> Result<(), GraphErrors> {
    let mut p = Parser {
        chars: text.chars().collect(),
        pos: 0,
        line: 1,
        col: 1,
        file,
        errors: Vec::new(),
    };
    p.declarations(builder);
    p.connections(builder);
    if p.errors.is_empty() {
        Ok(())
    } else {
        Err(GraphErrors(p.errors))
    }
}

struct Parser<'f> {
    chars: Vec<char>,
    pos: usize,
    line: u32,
    col: u32,
    file: Option<&'f str>,
    errors: Vec<GraphError>,
}

/// A syntax error's message and where it is.
struct Syntax(String, Location);

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    fn peek2(&self) -> Option<char> {
        self.chars.get(self.pos + 1).copied()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }
    fn here(&self) -> Location {
        Location {
            file: self.file.map(str::to_owned),
            line: self.line,
            column: Some(self.col),
        }
    }
    /// Skips whitespace and `#` comments.
    fn skip_blank(&mut self) {
        while let Some(c) = self.peek() {
            if c == '#' {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.bump();
                }
            } else if c.is_whitespace() {
                self.bump();
            } else {
                break;
            }
        }
    }
    /// What is at the cursor, for messages: a whole name or one character.
    fn found(&self) -> String {
        match self.peek() {
            None => "end of file".to_owned(),
            Some('\n') => "end of line".to_owned(),
            Some(c) if is_name_char(c) => {
                let word: String = self.chars[self.pos..]
                    .iter()
                    .take_while(|&&c| is_name_char(c))
                    .take(40)
                    .collect();
                format!("`{word}`")
            }
            Some(c) => format!("`{c}`"),
        }
    }
    fn expected(&self, what: &str) -> Syntax {
        Syntax(
            format!("expected {what}, found {}", self.found()),
            self.here(),
        )
    }
    fn record(&mut self, Syntax(message, location): Syntax) {
        self.errors.push(GraphError {
            location: Some(location),
            kind: GraphErrorKind::Syntax { message },
        });
    }
    /// Error recovery: skip past the next `;`, stopping early (without
    /// consuming) at `@` when `stop_at_at`, so the sections stay aligned.
    fn recover(&mut self, stop_at_at: bool) {
        let mut in_string = false;
        while let Some(c) = self.peek() {
            match c {
                '\n' => in_string = false,
                '"' => in_string = !in_string,
                '#' if !in_string => {
                    self.skip_blank();
                    continue;
                }
                ';' if !in_string => {
                    self.bump();
                    return;
                }
                '@' if !in_string && stop_at_at => return,
                _ => {}
            }
            self.bump();
        }
    }

    fn name(&mut self, what: &str) -> Result<String, Syntax> {
        let mut s = String::new();
        while let Some(c) = self.peek().filter(|&c| is_name_char(c)) {
            s.push(c);
            self.bump();
        }
        if s.is_empty() {
            Err(self.expected(what))
        } else {
            Ok(s)
        }
    }

    fn value(&mut self) -> Result<String, Syntax> {
        if self.peek() == Some('"') {
            let start = self.here();
            self.bump();
            let mut s = String::new();
            loop {
                match self.peek() {
                    None | Some('\n') => {
                        return Err(Syntax("unterminated string".to_owned(), start))
                    }
                    Some('"') => {
                        self.bump();
                        return Ok(s);
                    }
                    Some('\\') => {
                        self.bump();
                        match self.peek() {
                            Some(c @ ('"' | '\\')) => {
                                self.bump();
                                s.push(c);
                            }
                            Some('n') => {
                                self.bump();
                                s.push('\n');
                            }
                            _ => {
                                return Err(Syntax(
                                    "only `\\\"`, `\\\\` and `\\n` escapes are allowed in strings"
                                        .to_owned(),
                                    self.here(),
                                ))
                            }
                        }
                    }
                    Some(c) => {
                        self.bump();
                        s.push(c);
                    }
                }
            }
        }
        let mut s = String::new();
        while let Some(c) = self
            .peek()
            .filter(|&c| !c.is_whitespace() && !matches!(c, ';' | '#' | '=' | '"' | '@'))
        {
            s.push(c);
            self.bump();
        }
        if s.is_empty() {
            Err(self.expected("a value"))
        } else {
            Ok(s)
        }
    }

    /// `name=… module=… key=value … ;` statements up to `@` or the end.
    fn declarations(&mut self, builder: &mut GraphBuilder<'_>) {
        loop {
            self.skip_blank();
            match self.peek() {
                None => return,
                Some('@') => {
                    self.bump();
                    return;
                }
                Some(';') => {
                    self.bump();
                }
                Some(_) => {
                    if let Err(e) = self.declaration(builder) {
                        self.record(e);
                        self.recover(true);
                    }
                }
            }
        }
    }

    fn declaration(&mut self, builder: &mut GraphBuilder<'_>) -> Result<(), Syntax> {
        let start = self.here();
        let mut name: Option<String> = None;
        let mut module: Option<String> = None;
        let mut params = Vec::new();
        loop {
            // Just past the last token: where a missing `;` belongs.
            let after_last = self.here();
            self.skip_blank();
            if self.peek() == Some(';') {
                self.bump();
                break;
            }
            if matches!(self.peek(), None | Some('@')) {
                return Err(Syntax(
                    format!(
                        "missing `;` at the end of the declaration (found {})",
                        self.found()
                    ),
                    after_last,
                ));
            }
            let key_at = self.here();
            let key = self.name("a `key=value` pair or `;`")?;
            self.skip_blank();
            if self.peek() != Some('=') {
                return Err(self.expected(&format!("`=` after `{key}`")));
            }
            self.bump();
            self.skip_blank();
            let value = self.value()?;
            let slot = match key.as_str() {
                "name" => &mut name,
                "module" => &mut module,
                _ => {
                    params.push((key, value));
                    continue;
                }
            };
            if slot.is_some() {
                return Err(Syntax(format!("`{key}=` given twice"), key_at));
            }
            *slot = Some(value);
        }
        let Some(module) = module else {
            return Err(Syntax(
                "instance declaration without `module=`".to_owned(),
                start,
            ));
        };
        // Scout: "if the instance name … is omitted …, the module name is
        // used by default" (thesis §3.2.3).
        let name = name.unwrap_or_else(|| module.clone());
        let mut inst = builder.instance(name, module).at(Location {
            column: None,
            ..start
        });
        for (k, v) in params {
            inst = inst.param(k, v);
        }
        Ok(())
    }

    /// `inst.[<]svc <> inst.[<]svc ;` statements to the end.
    fn connections(&mut self, builder: &mut GraphBuilder<'_>) {
        loop {
            self.skip_blank();
            match self.peek() {
                None => return,
                Some(';') => {
                    self.bump();
                }
                Some('@') => {
                    self.record(Syntax(
                        "a second `@` (only one separates declarations from connections)"
                            .to_owned(),
                        self.here(),
                    ));
                    self.bump();
                }
                Some(_) => {
                    if let Err(e) = self.connection(builder) {
                        self.record(e);
                        self.recover(false);
                    }
                }
            }
        }
    }

    fn end(&mut self) -> Result<ServiceRef, Syntax> {
        let instance = self.name("an instance name")?;
        self.skip_blank();
        if self.peek() != Some('.') {
            return Err(self.expected(&format!("`.` and a service name after `{instance}`")));
        }
        self.bump();
        self.skip_blank();
        let marked = self.peek() == Some('<') && self.peek2() != Some('>');
        if marked {
            self.bump();
            self.skip_blank();
        }
        let service = self.name("a service name")?;
        let end = ServiceRef::new(instance, service);
        Ok(if marked { end.init_after() } else { end })
    }

    fn connection(&mut self, builder: &mut GraphBuilder<'_>) -> Result<(), Syntax> {
        let start = self.here();
        let a = self.end()?;
        self.skip_blank();
        if !(self.peek() == Some('<') && self.peek2() == Some('>')) {
            return Err(self.expected("`<>`"));
        }
        self.bump();
        self.bump();
        self.skip_blank();
        let b = self.end()?;
        let after_last = self.here();
        self.skip_blank();
        if self.peek() != Some(';') {
            return Err(Syntax(
                format!("missing `;` after `{a}<>{b}` (found {})", self.found()),
                after_last,
            ));
        }
        self.bump();
        builder.connection(
            a,
            b,
            Some(Location {
                column: None,
                ..start
            }),
        );
        Ok(())
    }
}

/// Whether a parameter value can be written without quotes.
fn is_bare(v: &str) -> bool {
    !v.is_empty()
        && v.chars()
            .all(|c| !c.is_whitespace() && !matches!(c, ';' | '#' | '=' | '"' | '@' | '\\'))
}

// The text form is a front end of the graph, like `GraphBuilder`: the
// graph type knows nothing of it, so these constructors live with the
// parser rather than beside the graph's accessors.
impl ModuleGraph {
    /// Parses and checks a graph in the text format (see `graphs/README.md`).
    /// `file_name` only labels error locations.
    pub fn from_text(
        text: &str,
        file_name: Option<&str>,
        specs: &SpecRegistry,
    ) -> Result<ModuleGraph, GraphErrors> {
        let mut builder = GraphBuilder::new(specs);
        parse_into(text, file_name, &mut builder)?;
        let mut graph = builder.build()?;
        graph.file = file_name.map(str::to_owned);
        Ok(graph)
    }

    /// Reads, parses and checks a graph file.
    pub fn from_file(
        path: impl AsRef<Path>,
        specs: &SpecRegistry,
    ) -> Result<ModuleGraph, GraphErrors> {
        let path = path.as_ref();
        let name = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_text(&text, Some(&name), specs),
            Err(e) => Err(GraphErrors(vec![GraphError {
                location: None,
                kind: GraphErrorKind::Io {
                    message: format!("{name}: {e}"),
                },
            }])),
        }
    }
}

impl ModuleGraph {
    /// The graph in the text format, canonically: one declaration per
    /// line, then `@`, then one connection per line with the `<` markers
    /// that were written (spec-level ones are implied by the module types).
    /// Reading it back gives an equal graph.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for inst in self.instances() {
            let _ = write!(s, "name={} module={}", inst.name, inst.spec.name);
            for (k, v) in &inst.params {
                if is_bare(v) {
                    let _ = write!(s, " {k}={v}");
                } else {
                    let escaped = v
                        .replace('\\', "\\\\")
                        .replace('"', "\\\"")
                        .replace('\n', "\\n");
                    let _ = write!(s, " {k}=\"{escaped}\"");
                }
            }
            s.push_str(";\n");
        }
        s.push_str("@\n");
        for c in self.connections() {
            let end = |i: usize| {
                let inst = self.instance(c.ends[i].instance);
                let marker = if c.marked[i] { "<" } else { "" };
                format!(
                    "{}.{marker}{}",
                    inst.name, inst.spec.services[c.ends[i].service].name
                )
            };
            let _ = writeln!(s, "{}<>{};", end(0), end(1));
        }
        s
    }
}
