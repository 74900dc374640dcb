//! The stream and its receiver of the priority experiment
//! (`scripts/study-priority.sh`, thesis Table 5.5): see
//! [`pathstack_tools::priority_stream`].
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    pathstack_tools::priority_stream::main()
}
