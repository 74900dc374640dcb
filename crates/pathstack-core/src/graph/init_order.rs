//! Module initialization order (thesis §3.2.3.2): when a module is
//! initialized, every module connected to it through a service marked `<`
//! must already be initialized. The markers form a partial order; a cycle
//! makes the graph invalid.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::error::Location;
use super::module_graph::{Connection, Instance, InstanceId};

/// A cycle in the `<` constraints.
pub(super) struct Cycle {
    /// Instances on the cycle, each initialized after the next; the first is
    /// repeated at the end.
    pub instances: Vec<InstanceId>,
    /// Lines of the connections along the cycle, where known.
    pub lines: Vec<u32>,
    /// Location of the first connection on the cycle.
    pub location: Option<Location>,
}

/// A topological order of the instances honouring every `<` marker, ties
/// broken by declaration order; or one cycle per strongly connected group
/// of instances whose constraints contradict each other.
pub(super) fn compute(
    instances: &[Instance],
    connections: &[Connection],
) -> Result<Vec<InstanceId>, Vec<Cycle>> {
    let n = instances.len();
    // waits[a] = (b, connection index): a is initialized after b.
    let mut waits: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    // enables[b] = instances waiting for b.
    let mut enables: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (ci, c) in connections.iter().enumerate() {
        for side in 0..2 {
            if c.init_after[side] {
                let after = c.ends[side].instance.index();
                let before = c.ends[1 - side].instance.index();
                waits[after].push((before, ci));
                enables[before].push(after);
            }
        }
    }

    // Kahn's algorithm with a min-heap: the smallest ready id goes first,
    // which makes the order the lexicographically least valid one.
    let mut pending: Vec<usize> = waits.iter().map(Vec::len).collect();
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..n).filter(|&i| pending[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(i)) = ready.pop() {
        order.push(InstanceId(i as u32));
        for &later in &enables[i] {
            pending[later] -= 1;
            if pending[later] == 0 {
                ready.push(Reverse(later));
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }

    // Some instances wait, directly or not, on themselves. Group the
    // unordered ones into strongly connected components and show one
    // shortest cycle per component. Graphs are small (tens of instances),
    // so quadratic reachability is plenty.
    let stuck: Vec<usize> = (0..n).filter(|&i| pending[i] > 0).collect();
    let reach = |from: usize| -> Vec<bool> {
        let mut seen = vec![false; n];
        let mut queue = VecDeque::from([from]);
        while let Some(v) = queue.pop_front() {
            for &(w, _) in &waits[v] {
                if pending[w] > 0 && !seen[w] {
                    seen[w] = true;
                    queue.push_back(w);
                }
            }
        }
        seen
    };
    let reachable: Vec<Vec<bool>> = (0..n)
        .map(|i| if pending[i] > 0 { reach(i) } else { Vec::new() })
        .collect();
    let mut assigned = vec![false; n];
    let mut cycles = Vec::new();
    for &start in &stuck {
        if assigned[start] || !reachable[start][start] {
            continue;
        }
        for &v in &stuck {
            if reachable[start][v] && reachable[v][start] {
                assigned[v] = true;
            }
        }
        cycles.push(shortest_cycle(start, &waits, &reachable, connections));
    }
    Err(cycles)
}

/// The shortest cycle through `start` along `waits` edges, staying inside
/// `start`'s strongly connected component.
fn shortest_cycle(
    start: usize,
    waits: &[Vec<(usize, usize)>],
    reachable: &[Vec<bool>],
    connections: &[Connection],
) -> Cycle {
    let n = waits.len();
    let in_scc = |v: usize| reachable[start][v] && reachable[v][start];
    // parent[v] = (predecessor on the BFS tree, connection used).
    let mut parent: Vec<Option<(usize, usize)>> = vec![None; n];
    let mut queue = VecDeque::from([start]);
    let mut closing = None;
    'bfs: while let Some(v) = queue.pop_front() {
        for &(w, ci) in &waits[v] {
            if w == start {
                closing = Some((v, ci));
                break 'bfs;
            }
            if in_scc(w) && parent[w].is_none() {
                parent[w] = Some((v, ci));
                queue.push_back(w);
            }
        }
    }
    // `start` reaches itself, so the search always closes the cycle.
    let (mut v, last_ci) = closing.unwrap_or((start, usize::MAX));
    let mut rev_nodes = vec![start];
    let mut rev_conns = vec![last_ci];
    while v != start {
        rev_nodes.push(v);
        match parent[v] {
            Some((p, ci)) => {
                rev_conns.push(ci);
                v = p;
            }
            None => break,
        }
    }
    rev_nodes.push(start);
    rev_nodes.reverse();
    rev_conns.reverse();
    let conns: Vec<&Connection> = rev_conns
        .iter()
        .filter_map(|&ci| connections.get(ci))
        .collect();
    Cycle {
        instances: rev_nodes
            .into_iter()
            .map(|i| InstanceId(i as u32))
            .collect(),
        lines: conns
            .iter()
            .filter_map(|c| c.location.as_ref().map(|l| l.line))
            .collect(),
        location: conns.first().and_then(|c| c.location.clone()),
    }
}
