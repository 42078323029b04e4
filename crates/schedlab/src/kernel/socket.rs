//! AF_UNIX stream sockets as 2.4 had them: skbs queued on the peer and charged to the
//! sender's buffer until read, `data_ready` and `write_space` wake-ups. TCP is
//! [`super::tcp`].

use crate::kernel::abi::EPIPE;
use crate::kernel::chan::Fd;
use crate::kernel::frame::Sys;
use crate::kernel::task::TaskId;
use crate::kernel::waitq::WqId;
use crate::kernel::{Acct, Kernel};
use crate::machine::CpuId;

use super::syscall::{write_again, Outcome, Wakes};

impl Kernel {
    /// AF_UNIX receive (`unix_stream_recvmsg`): wait for data; copy across skbs up to `len`; freeing skbs
    /// returns send-buffer space, and when the writer's buffer is at most a quarter full
    /// its `write_space` wakes it.
    pub(super) fn sock_read(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
        wakes: &mut Wakes,
    ) -> Outcome {
        let costs = self.machine.costs();
        let call = costs.unix_call_ns;
        self.charge(cpu, call, Acct::Running);
        self.touch_stream_state(cpu, s);
        if let Some(out) = self.wait_for_data(cpu, task, s, fd, len) {
            return out;
        }
        let curve: &[[u64; 2]] = if self.machine.skb_depth {
            costs.skb_depth_ns.points()
        } else {
            &[]
        };
        let ageing = costs
            .skb_cold_ns
            .map(|step_ns| crate::kernel::chan::Ageing {
                written: &self.skb_written,
                llc_written: &self.skb_written_llc,
                llc_of: &self.skb_llc,
                capacity: costs.l2_bytes,
                curve,
                step_ns,
            });
        let st = &mut self.streams[s];
        // Which skbs another CPU wrote, asked only where the preset prices them.
        let foreign = costs
            .skb_remote_ns
            .map(|ns| (ns, st.foreign_skbs(len, cpu)));
        let mut kmem = 0;
        let taken = st.take_skbs(len, ageing.as_ref(), &mut kmem);
        let (copied, freed, cold, cold_ns) =
            (taken.copied, taken.emptied, taken.cold, taken.cold_ns);
        self.kmem_free(super::kmem::KmemKind::Skbs, kmem);
        let st = &mut self.streams[s];
        st.wmem -= freed;
        let writable = freed > 0 && st.wmem * 4 <= st.cap;
        let write_wq = st.write_wq;
        // Skbs evicted from their writer's cache while queued: slab object, head and data
        // refill from as far as their depth put them (`skb_depth_ns`, `skb_cold_ns`,
        // measured per skb on modern hosts).
        if costs.skb_cold_ns.is_some() {
            self.stats.skb_cold += cold;
            self.stats.skb_depth_ns += cold_ns;
            self.charge(cpu, cold_ns, Acct::Running);
        }
        self.skb_allocator_shared(cpu, taken.deepest, cold);
        // Skbs another CPU wrote: their lines come from its cache and their slab objects
        // go back to a remote slab (`skb_remote_ns`, measured per skb on modern hosts).
        if let Some((ns, foreign)) = foreign {
            self.stats.skb_remote += foreign;
            self.charge(cpu, foreign * ns, Acct::Running);
        }
        self.copy(cpu, s, copied);
        if writable {
            wakes.push(self.data_wake(cpu, write_wq));
        }
        Outcome::Done(copied as i64)
    }

    /// Freed skbs turn the allocator's objects, slab pages and memory-cgroup charge over
    /// through state all CPUs share (the slab node's partial list under `list_lock`, the
    /// cgroup's `page_counter`) once a CPU's queued skbs outgrow its own caches of them:
    /// after another CPU did, that state comes from there. With the host's curve
    /// (`skb_shared_ns`, `skb_shared=on`) a read pays by the depth of the deepest skb it
    /// freed; else, reads that freed cold skbs pay `skb_page_shared_ns`. Both measured.
    fn skb_allocator_shared(&mut self, cpu: CpuId, deepest: Option<u64>, cold: u64) {
        let costs = self.machine.costs();
        let curve = &costs.skb_shared_ns;
        let price = if self.machine.skb_shared && !curve.is_empty() {
            deepest.map(|d| curve.band(d))
        } else {
            costs.skb_page_shared_ns.filter(|_| cold > 0)
        };
        let Some(ns) = price else {
            return;
        };
        if self.skb_pages_owner.replace(cpu).is_some_and(|o| o != cpu) {
            self.stats.skb_page_pulls += 1;
            self.stats.skb_shared_ns += ns;
            self.charge(cpu, ns, Acct::Running);
        }
    }

    /// Sleep on the read queue while a socket stream has nothing `cpu` can see yet and has
    /// a writer, or data still on its way (the caller retries the read when woken: the
    /// packet's wake-up comes once its path has run, [`Frame::WakeQueue`]); end of file
    /// once the writers are gone and nothing is left.
    ///
    /// [`Frame::WakeQueue`]: crate::kernel::frame::Frame::WakeQueue
    pub(super) fn wait_for_data(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
    ) -> Option<Outcome> {
        let st = &self.streams[s];
        if st.visible_len(self.cpus[cpu].clock) > 0 {
            return None;
        }
        if st.writers == 0 && st.len == 0 {
            return Some(Outcome::Done(0));
        }
        let wq = st.read_wq;
        Some(self.sleep_for_data(task, wq, fd, len))
    }

    /// `task` sleeps on the read queue `wq` until data comes, then retries its read of
    /// `len` bytes on `fd` as the same call.
    pub(super) fn sleep_for_data(&mut self, task: TaskId, wq: WqId, fd: Fd, len: u64) -> Outcome {
        self.sleep_on(task, wq);
        Outcome::Block(Sys::Read {
            fd,
            len,
            done: 0,
            again: true,
        })
    }

    /// AF_UNIX send (2.4 `unix_stream_sendmsg`): chunks of at most `sndbuf/2 − 64`,
    /// each an skb queued on the peer and charged to the send buffer; sleep while the
    /// buffer is full; each skb wakes the reader (`data_ready`: asynchronous before 6.x).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sock_write(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
        mut done: u64,
        wakes: &mut Wakes,
    ) -> Outcome {
        let costs = self.machine.costs();
        let call = costs.unix_call_ns;
        if self.streams[s].readers == 0 {
            return Outcome::Done(if done > 0 { done as i64 } else { EPIPE });
        }
        self.touch_stream_state(cpu, s);
        while done < len {
            let st = &self.streams[s];
            if st.wmem >= st.cap {
                let wq = st.write_wq;
                self.sleep_on(task, wq);
                return write_again(fd, len, done);
            }
            let size = (len - done).min(st.cap / 2 - 64);
            self.charge(cpu, call, Acct::Running);
            // The skb is fresh memory: no remote lines to pull.
            self.streams[s].last_cpu = None;
            self.copy(cpu, s, size);
            let kmem = self.kmem_sizes.skb(size);
            self.kmem_alloc(super::kmem::KmemKind::Skbs, kmem, "an AF_UNIX skb");
            self.skb_written[cpu] += size + costs.skb_overhead_bytes;
            let stamp = self.skb_written[cpu];
            let llc = self.skb_llc[cpu];
            self.skb_written_llc[llc] += size + costs.skb_overhead_bytes;
            let llc_stamp = self.skb_written_llc[llc];
            let st = &mut self.streams[s];
            st.skbs.push_back(crate::kernel::chan::Skb {
                data: size,
                truesize: size + costs.skb_overhead_bytes,
                cpu,
                stamp,
                llc_stamp,
                kmem,
                visible_at: 0,
            });
            st.wmem += size + costs.skb_overhead_bytes;
            st.len += size;
            st.written += size;
            done += size;
            let rq = st.read_wq;
            wakes.push(self.data_wake(cpu, rq));
        }
        Outcome::Done(len as i64)
    }
}
