//! Test fixture: a component of the `wasi:cli/command` world, not of `aiphost:partner`.

fn main() {
    println!("I am a command, not a partner.");
}
