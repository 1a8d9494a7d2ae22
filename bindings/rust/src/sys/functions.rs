//! The C API's functions, as `include/tlio/tlio.h` declares them (the types are `super`'s).
use super::*;
use std::os::raw::{c_char, c_int, c_uint, c_void};

extern "C" {
    pub fn tl_version() -> *const c_char;
    pub fn tl_last_error() -> *const c_char;
    pub fn tl_last_error_rule() -> *const c_char;
    pub fn tl_last_error_errno() -> c_int;
    pub fn tl_dtype_name(dtype: tl_dtype) -> *const c_char;
    pub fn tl_dtype_from_name(name: *const c_char, out: *mut tl_dtype) -> c_int;
    pub fn tl_dtype_bits(dtype: tl_dtype) -> c_uint;
    pub fn tl_set_interrupt_check(check: tl_interrupt_fn, context: *mut c_void);
    pub fn tl_remove_temporary_files();

    pub fn tl_open(path: *const c_char, out: *mut *mut tl_file) -> c_int;
    pub fn tl_open_ex(path: *const c_char, flags: c_uint, out: *mut *mut tl_file) -> c_int;
    pub fn tl_open_options_init(options: *mut tl_open_options);
    pub fn tl_open_with(
        path: *const c_char,
        options: *const tl_open_options,
        out: *mut *mut tl_file,
    ) -> c_int;
    pub fn tl_open_memory(data: *const c_void, size: usize, out: *mut *mut tl_file) -> c_int;
    pub fn tl_close(file: *mut tl_file);

    pub fn tl_tensor_count(file: *const tl_file) -> usize;
    pub fn tl_tensor_find(file: *const tl_file, name: *const c_char, index: *mut usize) -> c_int;
    pub fn tl_tensor_info(file: *const tl_file, index: usize, out: *mut tl_tensor_info) -> c_int;
    pub fn tl_tensor_read(
        file: *const tl_file,
        index: usize,
        dst: *mut c_void,
        dst_size: usize,
    ) -> c_int;
    pub fn tl_tensor_read_many(
        file: *const tl_file,
        indices: *const usize,
        dsts: *mut *mut c_void,
        sizes: *const usize,
        count: usize,
    ) -> c_int;
    pub fn tl_tensor_read_as(
        file: *const tl_file,
        index: usize,
        to: tl_dtype,
        dst: *mut c_void,
        dst_size: usize,
    ) -> c_int;

    pub fn tl_metadata_get(file: *const tl_file, key: *const c_char) -> *const c_char;
    pub fn tl_metadata_count(file: *const tl_file) -> usize;
    pub fn tl_metadata_at(
        file: *const tl_file,
        i: usize,
        key: *mut *const c_char,
        value: *mut *const c_char,
    ) -> c_int;

    pub fn tl_model_open(dir: *const c_char, out: *mut *mut tl_model) -> c_int;
    pub fn tl_model_open_with(
        dir: *const c_char,
        options: *const tl_open_options,
        out: *mut *mut tl_model,
    ) -> c_int;
    pub fn tl_model_close(model: *mut tl_model);
    pub fn tl_model_arch(model: *const tl_model) -> *const c_char;
    pub fn tl_model_quantization_config(model: *const tl_model) -> *const c_char;
    pub fn tl_model_check(model: *const tl_model) -> c_int;
    pub fn tl_model_file_count(model: *const tl_model) -> usize;
    pub fn tl_model_file(model: *const tl_model, i: usize) -> *const tl_file;
    pub fn tl_model_find(
        model: *const tl_model,
        name: *const c_char,
        file: *mut *const tl_file,
        index: *mut usize,
    ) -> c_int;

    pub fn tl_writer_open(path: *const c_char, out: *mut *mut tl_writer) -> c_int;
    pub fn tl_writer_set_metadata(
        writer: *mut tl_writer,
        key: *const c_char,
        value: *const c_char,
    ) -> c_int;
    pub fn tl_writer_declare(
        writer: *mut tl_writer,
        name: *const c_char,
        dtype: tl_dtype,
        rank: usize,
        shape: *const u64,
    ) -> c_int;
    pub fn tl_writer_add(
        writer: *mut tl_writer,
        name: *const c_char,
        dtype: tl_dtype,
        rank: usize,
        shape: *const u64,
        data: *const c_void,
        size: usize,
    ) -> c_int;
    pub fn tl_writer_write(
        writer: *mut tl_writer,
        name: *const c_char,
        data: *const c_void,
        size: usize,
    ) -> c_int;
    pub fn tl_writer_append(
        writer: *mut tl_writer,
        name: *const c_char,
        data: *const c_void,
        size: usize,
    ) -> c_int;
    pub fn tl_writer_commit(writer: *mut tl_writer) -> c_int;
    pub fn tl_writer_abort(writer: *mut tl_writer);

    pub fn tl_convert(
        from: tl_dtype,
        src: *const c_void,
        src_size: usize,
        to: tl_dtype,
        dst: *mut c_void,
        dst_size: usize,
        count: u64,
    ) -> c_int;
    pub fn tl_quantized_count(file: *const tl_file, count: *mut usize) -> c_int;
    pub fn tl_quantized_at(
        file: *const tl_file,
        index: usize,
        info: *mut tl_quantized_info,
    ) -> c_int;
    pub fn tl_quantized_read(
        file: *const tl_file,
        name: *const c_char,
        first: u64,
        count: u64,
        out: tl_dtype,
        dst: *mut c_void,
        dst_size: usize,
    ) -> c_int;
    pub fn tl_quantize_options_init_sized(options: *mut tl_quantize_options, size: usize);
    pub fn tl_quantize_options_init(options: *mut tl_quantize_options);
    pub fn tl_quantize_file_with(
        src: *const c_char,
        dst: *const c_char,
        options: *const tl_quantize_options,
    ) -> c_int;
    pub fn tl_quantize_file(
        src: *const c_char,
        dst: *const c_char,
        scheme: *const c_char,
        blocksize: u64,
        nested: c_int,
        include: *const c_char,
        exclude: *const c_char,
    ) -> c_int;
    pub fn tl_dequantize_file(src: *const c_char, dst: *const c_char, dtype: c_int) -> c_int;
    pub fn tl_convert_folder(
        src: *const c_char,
        dst: *const c_char,
        dtype: c_int,
        max_shard_size: u64,
    ) -> c_int;
    pub fn tl_convert_folder_ex(
        src: *const c_char,
        dst: *const c_char,
        dtype: c_int,
        max_shard_size: u64,
        cast: c_int,
        overflowed: *mut u64,
        flushed: *mut u64,
    ) -> c_int;
    pub fn tl_quantize_folder(
        src: *const c_char,
        dst: *const c_char,
        options: *const tl_quantize_options,
        max_shard_size: u64,
    ) -> c_int;
    pub fn tl_dequantize_folder(
        src: *const c_char,
        dst: *const c_char,
        dtype: c_int,
        max_shard_size: u64,
    ) -> c_int;
    pub fn tl_job_begin(id: *const c_char, step: c_int, unit: u64) -> c_int;
    pub fn tl_job_units() -> u64;
    pub fn tl_job_end();
    pub fn tl_compare_options_init_sized(options: *mut tl_compare_options, size: usize);
    pub fn tl_compare_options_init(options: *mut tl_compare_options);
    pub fn tl_compare_files(
        a: *const tl_file,
        b: *const tl_file,
        options: *const tl_compare_options,
        out: *mut *mut tl_comparison,
    ) -> c_int;
    pub fn tl_compare_sets(
        a: *const *const tl_file,
        a_count: usize,
        b: *const *const tl_file,
        b_count: usize,
        options: *const tl_compare_options,
        out: *mut *mut tl_comparison,
    ) -> c_int;
    pub fn tl_compare_locations(
        a: *const c_char,
        b: *const c_char,
        options: *const tl_compare_options,
        open: *const tl_open_options,
        out: *mut *mut tl_comparison,
    ) -> c_int;
    pub fn tl_comparison_b_name(comparison: *const tl_comparison, index: usize) -> *const c_char;
    pub fn tl_comparison_equal(comparison: *const tl_comparison) -> c_int;
    pub fn tl_comparison_count(comparison: *const tl_comparison) -> usize;
    pub fn tl_comparison_at(
        comparison: *const tl_comparison,
        index: usize,
        out: *mut tl_tensor_comparison,
    ) -> c_int;
    pub fn tl_comparison_only_count(comparison: *const tl_comparison, side: c_int) -> usize;
    pub fn tl_comparison_only_at(
        comparison: *const tl_comparison,
        side: c_int,
        index: usize,
    ) -> *const c_char;
    pub fn tl_comparison_free(comparison: *mut tl_comparison);
    pub fn tl_edit_options_init(options: *mut tl_edit_options);
    pub fn tl_edit_file(
        src: *const c_char,
        dst: *const c_char,
        options: *const tl_edit_options,
        report: *mut tl_edit_report,
    ) -> c_int;
    pub fn tl_import_checkpoint(
        src: *const c_char,
        dst: *const c_char,
        key: *const c_char,
        flags: c_uint,
        max_shard_size: u64,
        tensors: *mut u64,
    ) -> c_int;
    pub fn tl_import_checkpoint_as(
        src: *const c_char,
        dst: *const c_char,
        key: *const c_char,
        flags: c_uint,
        max_shard_size: u64,
        dtype: c_int,
        tensors: *mut u64,
    ) -> c_int;
    pub fn tl_gguf_open(
        location: *const c_char,
        options: *const tl_open_options,
        out: *mut *mut tl_gguf,
    ) -> c_int;
    pub fn tl_gguf_close(file: *mut tl_gguf);
    pub fn tl_gguf_tensor_count(file: *const tl_gguf) -> usize;
    pub fn tl_gguf_tensor_at(file: *const tl_gguf, index: usize, out: *mut tl_gguf_tensor)
        -> c_int;
    pub fn tl_gguf_find(file: *const tl_gguf, name: *const c_char, index: *mut usize) -> c_int;
    pub fn tl_gguf_read(
        file: *const tl_gguf,
        index: usize,
        first: u64,
        count: u64,
        dtype: tl_dtype,
        dst: *mut c_void,
        dst_size: usize,
    ) -> c_int;
    pub fn tl_gguf_read_slice(
        file: *const tl_gguf,
        index: usize,
        rank: usize,
        starts: *const u64,
        stops: *const u64,
        dtype: tl_dtype,
        dst: *mut c_void,
        dst_size: usize,
    ) -> c_int;
    pub fn tl_gguf_metadata(
        file: *const tl_gguf,
        key: *const c_char,
        text: *mut *const c_char,
    ) -> c_int;
    pub fn tl_import_gguf(
        src: *const c_char,
        dst: *const c_char,
        dtype: tl_dtype,
        options: *const tl_open_options,
        tensors: *mut u64,
    ) -> c_int;
    pub fn tl_transcode(
        src: *const c_char,
        dst: *const c_char,
        to: *const c_char,
        lossy: c_int,
        dtype: tl_dtype,
        options: *const tl_open_options,
        result: *mut tl_transcode_result,
    ) -> c_int;
    pub fn tl_import_gguf_model(
        src: *const c_char,
        dst: *const c_char,
        dtype: tl_dtype,
        options: *const tl_open_options,
        tensors: *mut u64,
    ) -> c_int;
    pub fn tl_export_gguf_split(
        src: *const c_char,
        dst: *const c_char,
        type_name: *const c_char,
        split_max_size: u64,
        options: *const tl_open_options,
        tensors: *mut u64,
    ) -> c_int;
    pub fn tl_export_gguf_with(
        src: *const c_char,
        dst: *const c_char,
        type_name: *const c_char,
        flags: c_uint,
        split_max_size: u64,
        options: *const tl_open_options,
        tensors: *mut u64,
    ) -> c_int;
    pub fn tl_requantize_gguf(
        src: *const c_char,
        dst: *const c_char,
        type_name: *const c_char,
        allow_requantize: c_int,
        options: *const tl_open_options,
        tensors: *mut u64,
    ) -> c_int;
    pub fn tl_export_gguf(
        src: *const c_char,
        dst: *const c_char,
        type_: *const c_char,
        options: *const tl_open_options,
        tensors: *mut u64,
    ) -> c_int;
    pub fn tl_report_options_init(options: *mut tl_report_options);
    pub fn tl_report_make(
        location: *const c_char,
        options: *const tl_report_options,
        open: *const tl_open_options,
        out: *mut *mut tl_report,
    ) -> c_int;
    pub fn tl_report_json(report: *const tl_report) -> *const c_char;
    pub fn tl_report_write_html(report: *const tl_report, out: *const c_char) -> c_int;
    pub fn tl_report_free(report: *mut tl_report);
    pub fn tl_hash_file(
        location: *const c_char,
        options: *const tl_open_options,
        sha256_hex: *mut c_char,
    ) -> c_int;
    pub fn tl_file_sha256(
        file: *const tl_file,
        expected_hex: *const c_char,
        sha256_hex: *mut c_char,
    ) -> c_int;
    pub fn tl_sign_folder(
        folder: *const c_char,
        private_key: *const c_char,
        signature: *const c_char,
    ) -> c_int;
    pub fn tl_verify_signature(
        folder: *const c_char,
        public_key: *const c_char,
        signature: *const c_char,
    ) -> c_int;
    pub fn tl_plan_options_init(options: *mut tl_plan_options);
    pub fn tl_plan_open(
        source: *const c_char,
        options: *const tl_plan_options,
        out: *mut *mut tl_plan,
    ) -> c_int;
    pub fn tl_plan_open_ex(
        source: *const c_char,
        options: *const tl_plan_options,
        flags: c_uint,
        out: *mut *mut tl_plan,
    ) -> c_int;
    pub fn tl_plan_free(plan: *mut tl_plan);
    pub fn tl_plan_add(
        plan: *mut tl_plan,
        name: *const c_char,
        rank: usize,
        starts: *const u64,
        stops: *const u64,
        dtype: c_int,
        item: *mut usize,
    ) -> c_int;
    pub fn tl_plan_item(plan: *const tl_plan, item: usize, out: *mut tl_plan_item_info) -> c_int;
    pub fn tl_plan_item_range(
        plan: *const tl_plan,
        item: usize,
        file: *mut usize,
        offset: *mut u64,
    ) -> c_int;
    pub fn tl_plan_clear(plan: *mut tl_plan) -> c_int;
    pub fn tl_plan_set_destination(
        plan: *mut tl_plan,
        item: usize,
        dst: *mut c_void,
        size: usize,
    ) -> c_int;
    pub fn tl_plan_reads(plan: *mut tl_plan, count: *mut usize, wanted_bytes: *mut u64) -> c_int;
    pub fn tl_plan_read_at(
        plan: *const tl_plan,
        index: usize,
        file: *mut usize,
        offset: *mut u64,
        length: *mut u64,
    ) -> c_int;
    pub fn tl_plan_execute(plan: *mut tl_plan) -> c_int;
    pub fn tl_plan_deliver(
        plan: *mut tl_plan,
        file: usize,
        offset: u64,
        data: *const c_void,
        size: usize,
    ) -> c_int;
    pub fn tl_plan_finish(plan: *mut tl_plan) -> c_int;
}
