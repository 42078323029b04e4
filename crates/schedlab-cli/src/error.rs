//! The command line's errors, by kind. The kind chooses the exit status — never the text:
//!
//! | kind | exit | meaning |
//! |---|---|---|
//! | [`CliError::Usage`] | 2 | the arguments do not parse (clap's whole message) |
//! | [`CliError::Input`] | 2 | an unknown name, a bad value, an unusable path: nothing ran |
//! | [`CliError::Failed`] | 1 | the run started and failed (a workload error, a limit, a timeout, a write) |
//! | [`CliError::Interrupted`] | 128 + signal | SIGINT (130), SIGTERM (143) or SIGHUP (129) stopped a native run |

use std::process::ExitCode;

use schedlab::spec::SpecError;
use schedlab::SimError;
use schedlab_native::runner::RunError;
use schedlab_native::NativeError;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// clap could not parse the arguments; printed as clap renders it.
    #[error("{0}")]
    Usage(clap::Error),
    /// Bad input: nothing ran.
    #[error("{0}")]
    Input(String),
    /// The run failed.
    #[error("{0}")]
    Failed(String),
    /// A signal stopped the run: the message and the signal's number.
    #[error("{0}")]
    Interrupted(String, i32),
    /// Whoever read our stdout stopped reading (`| head`): end quietly, successfully.
    #[error("stdout closed")]
    ClosedStdout,
}

impl CliError {
    /// The process exit status for this kind of error.
    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            CliError::ClosedStdout => 0,
            CliError::Usage(_) | CliError::Input(_) => 2,
            CliError::Failed(_) => 1,
            // 128 + the signal, as a shell reports a command the signal ended.
            CliError::Interrupted(_, signal) => (128 + signal).clamp(129, 255) as u8,
        })
    }

    /// Print to stderr: clap's own rendering for usage errors, one line otherwise.
    pub(crate) fn print(&self) {
        match self {
            CliError::Usage(e) => {
                let _ = e.print();
            }
            CliError::ClosedStdout => {}
            other => eprintln!("schedlab: {other}"),
        }
    }
}

impl From<SpecError> for CliError {
    fn from(e: SpecError) -> Self {
        CliError::Input(e.to_string())
    }
}

impl From<SimError> for CliError {
    fn from(e: SimError) -> Self {
        if e.is_input() {
            CliError::Input(e.to_string())
        } else {
            CliError::Failed(e.to_string())
        }
    }
}

impl From<NativeError> for CliError {
    fn from(e: NativeError) -> Self {
        match &e {
            NativeError::Spec(_) => CliError::Input(e.to_string()),
            NativeError::Run(RunError::Interrupted { signal, .. }) => {
                CliError::Interrupted(e.to_string(), *signal)
            }
            NativeError::Run(_) => CliError::Failed(e.to_string()),
        }
    }
}

/// Write `text` to stdout. A reader that went away (`EPIPE`) ends the command quietly; any
/// other failure to write is a failed run.
pub(crate) fn out(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(CliError::ClosedStdout),
        Err(e) => Err(CliError::Failed(format!("cannot write to stdout: {e}"))),
    }
}
