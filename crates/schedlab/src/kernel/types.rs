//! The kernel's identifiers: the vocabulary every other kernel object, the program ABI,
//! the scheduling classes and the workloads share. Nothing here imports anything.

/// Index of a task in the kernel's task table. Tasks `0..cpus` are the idle tasks.
pub type TaskId = u32;

/// Index of a wait queue in the kernel's table.
pub type WqId = u32;

/// A file descriptor: an index in the kernel's (global) file table.
pub type Fd = u32;
