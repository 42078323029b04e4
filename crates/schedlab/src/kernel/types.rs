//! The kernel's identifiers: the vocabulary every other kernel object, the program ABI,
//! the scheduling classes and the workloads share. Nothing here imports anything.

/// Index of a task in the kernel's task table. Tasks `0..cpus` are the idle tasks.
pub type TaskId = u32;

/// Index of a wait queue in the kernel's table.
pub type WqId = u32;

/// A file descriptor: an index in the kernel's (global) file table.
pub type Fd = u32;

/// Tasks a wake-up walk took off a wait queue, in the order they are to be woken. Almost
/// always one or two: kept inline, so a wake-up allocates nothing.
pub type WakeList = smallvec::SmallVec<[TaskId; 4]>;
