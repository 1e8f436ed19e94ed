//! Rounds, bytes and products of every protocol, measured on n values, checked against
//! the formulas documented in protocols/mpc-*.md. Run with `--nocapture` for the table.

mod common;

use common::run_on;
use vtwin_fixed::Fx;
use vtwin_mpc::{binary, compare, exp, input, inv_sqrt, multiply, reciprocal, Counters, Delivery};

const N: usize = 1000;

/// Ring elements between nodes per truncated value (`multiply::layer`): node 0 sends
/// `z_0 + r - beta` and `t_1` to node 1 and `z_0 + r - alpha` to node 2, node 2 sends
/// `z_2 + beta` to node 1 and node 1 `z_1 + alpha` to node 2.
const TRUNC: u64 = 5;

/// Runs `op` after sharing two inputs of N values and checking them (seeds and corrections,
/// `input::check_inputs`); returns the three nodes' counters of the protocol
/// alone (input sharing and check excluded), summed (rounds: as executed).
fn measure<F, Fut>(op: F) -> Counters
where
    F: Fn(vtwin_mpc::Ctx, Vec<vtwin_mpc::Shared>) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = Result<(), vtwin_mpc::MpcError>> + 'static,
{
    let x: Vec<u128> = (0..N)
        .map(|k| Fx::from_f64(0.5 + k as f64).expect("x").0)
        .collect();
    let rep = run_on(vec![x.clone(), x], Delivery::Fifo, move |ctx, v| {
        let op = op.clone();
        async move {
            let checking = ctx.counters();
            input::check_inputs(&ctx).await?;
            let check = ctx.counters() - checking;
            let before = ctx.counters();
            op(ctx.clone(), v).await?;
            Ok((check, ctx.counters() - before))
        }
    })
    .expect("run");
    let [(ca, a), (cb, b), (cc, c)] = rep.outputs;
    // The check alone: 1 round; node 0's seed digests (4 elements to each of nodes 1 and
    // 2) and nodes 1 and 2's digest (2 elements each way).
    let check = ca.plus(cb).plus(cc);
    assert_eq!((check.rounds, check.elements, check.messages), (1, 12, 4));
    assert_eq!(a.rounds, b.rounds);
    assert_eq!(b.rounds, c.rounds);
    a.plus(b).plus(c)
}

macro_rules! protocol {
    (|$ctx:ident, $v:ident| $body:expr) => {
        |$ctx: vtwin_mpc::Ctx, $v: Vec<vtwin_mpc::Shared>| async move {
            $body.await?;
            Ok(())
        }
    };
}

fn row(name: &str, c: &Counters) {
    println!(
        "| {name} | {} | {} | {:.1} | {:.1} | {:.2} | {:.2} |",
        c.rounds,
        c.messages,
        c.elements as f64 / N as f64,
        c.bytes as f64 / N as f64,
        c.mults as f64 / 3.0 / N as f64,
        c.and_words as f64 / 3.0 / N as f64
    );
}

#[test]
fn measured_costs_match_the_analysis() {
    println!("n = {N}; per value; messages, elements and bytes summed over the three nodes; products and AND words per protocol (each node computes its share of each)");
    println!("| protocol | rounds | messages | elements/value | bytes/value | products/value | AND words/value |");
    println!("|---|---|---|---|---|---|---|");

    let c = measure(protocol!(|ctx, v| multiply::mul(&ctx, &v[0], &v[1])));
    row("mul (no truncation)", &c);
    assert_eq!((c.rounds, c.elements), (1, 3 * N as u64));

    let c = measure(protocol!(|ctx, v| multiply::mul_trunc(
        &ctx, &v[0], &v[1], 32
    )));
    row("mul_trunc", &c);
    // One round: node 0 sends 2 elements to node 1 and 1 to node 2, nodes 1 and 2 one each
    // to the other: 5 per truncated value.
    assert_eq!((c.rounds, c.elements), (1, TRUNC * N as u64));
    assert_eq!(c.truncations, N as u64 * 3);

    let c = measure(protocol!(|ctx, v| multiply::inner_products(
        &ctx, &v[0], &v[1], 10
    )));
    row("inner_products (len 10)", &c);
    assert_eq!((c.rounds, c.elements), (1, TRUNC * N as u64 / 10));

    let c = measure(protocol!(|ctx, v| input::reveal_to(&ctx, &v[0], 1)));
    row("reveal_to", &c);
    assert_eq!((c.rounds, c.elements), (1, 0));
    assert_eq!(c.bytes_to_clients, 3 * (38 + 16 * N as u64));

    let c = measure(protocol!(|ctx, v| binary::a2b(&ctx, &v[0], 7)));
    row("a2b / sign bit (128 bits)", &c);
    // carry-save 1 + generate 1 + 6 levels x 2 + last level 1 = 15 AND words per value.
    assert_eq!((c.rounds, c.and_words), (9, 3 * 15 * N as u64));

    let c = measure(protocol!(|ctx, v| compare::less_than(&ctx, &v[0], &v[1])));
    row("less_than", &c);
    assert_eq!((c.rounds, c.elements), (10, 3 * 17 * N as u64));

    let c = measure(protocol!(|ctx, v| reciprocal::reciprocal(&ctx, &v[0])));
    row("reciprocal", &c);
    // Per node: the one-hot MSB (64-bit window, 6 levels): carry-save 1 + generate 1 +
    // 5 levels x (2 adder + 1 suffix-AND) + the last level 2 + the final AND 1 = 20 words;
    // injection of 16 bits 32 elements (6 per bit in all, 2 sent by each node on average);
    // selection 2 outputs; the untruncated half of the scale-back 1. Plus 5 elements in all
    // per truncation, 8 truncations. Rounds: one-hot 2 + 6 + 1, injection 1 and selection
    // 1, then 6 truncation layers of 1 round (m, e, three Goldschmidt factors with e^2
    // beside the first two, the scale-back).
    assert_eq!(c.rounds, 9 + 2 + 6);
    assert_eq!(c.elements, N as u64 * (3 * (20 + 32 + 2 + 1) + TRUNC * 8));

    let c = measure(protocol!(|ctx, v| inv_sqrt::inv_sqrt(&ctx, &v[0])));
    row("inv_sqrt", &c);
    // Per node: one-hot MSB (80-bit window, 7 levels) 1 + 1 + 6 x 3 + 2 + 1 = 23 words; 18
    // injections 36; selection 3 outputs; scale-back 1. Plus 15 truncations of 5 elements
    // (each Newton-Raphson step truncates y^2, h y, 1.5 y, then (h y) y^2). Rounds: 10 + 2 + 9
    // (one-hot, injection and selection, then h, the line, 3 x 2 steps, the scale-back).
    assert_eq!(c.rounds, 10 + 2 + 9);
    assert_eq!(c.elements, N as u64 * (3 * (23 + 36 + 3 + 1) + TRUNC * 15));

    let c = measure(protocol!(|ctx, v| inv_sqrt::clip_factor(
        &ctx,
        &v[0],
        Fx::from_f64(1.0).expect("C")
    )));
    row("clip_factor", &c);
    // inv_sqrt with the adder of the sign of C^2 - x batched in (15 words: it rides the same
    // 7 levels) and its injection (2), one more truncation (C y), and the final select
    // product (1 round, 1 element); 2 Newton-Raphson steps, not 3.
    // Per node: 23 + 15 + 19 x 2 + 3 + 1 + 1; 12 truncations in 8 layers.
    assert_eq!(c.rounds, 10 + 2 + 8 + 1);
    assert_eq!(
        c.elements,
        N as u64 * (3 * (23 + 15 + 38 + 3 + 1 + 1) + TRUNC * 12)
    );

    let c = measure(protocol!(|ctx, v| exp::exp(
        &ctx,
        &v[0].mul_public(u128::MAX)
    )));
    row("exp", &c);
    // Per node: A2B (40-bit window, 6 levels) 13 words; 8 injections 16; product tree 6.
    // Plus 9 truncations. Rounds: u 1 + A2B 8 + injection 1 + product tree 3 + Horner 7 +
    // the final product 1 (each truncation layer 1 round).
    assert_eq!(c.rounds, 1 + 8 + 1 + 3 + 7 + 1);
    assert_eq!(c.elements, N as u64 * (3 * (13 + 16 + 6) + TRUNC * 9));
}
