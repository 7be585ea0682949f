//! Renders a few rectangles and trapezoids offscreen and writes them to a PNG.
//!
//! `cargo run -p memviz-render --release --example rects -- [OUT.png]` (default
//! `target/screenshots/rects.png`). `WGPU_BACKEND=gl|vulkan` picks the backend.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use memviz_render::{rgba, Offscreen, Trapezoid, View};

    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/screenshots/rects.png".to_owned());
    let mut gpu = Offscreen::new()?;
    let info = gpu.adapter_info();
    println!(
        "adapter: {} ({:?}, {:?})",
        info.name, info.backend, info.device_type
    );

    // A "segment map": rows of blocks, some of them far thinner than a pixel.
    let mut instances = Vec::new();
    for row in 0..8_u8 {
        let mut x = 0.0_f32;
        for i in 0..40_u32 {
            let w = if i % 7 == 3 {
                0.0001
            } else {
                1.0 + ((i * 37 + u32::from(row) * 11) % 9) as f32
            };
            let shade = 90 + ((i * 53) % 120) as u8;
            instances.push(Trapezoid::rect(
                x,
                x + w,
                f32::from(row) + 0.1,
                f32::from(row) + 0.9,
                rgba(shade, 120, 255 - shade, 255),
            ));
            x += w + 0.5;
        }
    }
    // A slanted band and a hairline.
    instances.push(Trapezoid::new(
        10.0,
        150.0,
        [8.5, 9.0],
        [9.5, 11.0],
        rgba(255, 200, 80, 200),
    ));
    instances.push(Trapezoid::rect(
        0.0,
        250.0,
        8.0,
        8.0,
        rgba(220, 220, 220, 255),
    ));

    let batch = gpu.upload([0.0, 0.0], &instances);
    let view = View {
        x_range: (-2.0, 252.0),
        y_range: (-0.5, 11.5),
        viewport_px: (800, 300),
    };
    let image = gpu.render(&view, [0.1, 0.1, 0.12, 1.0], &[&batch])?;

    image.write_png(std::path::Path::new(&out))?;
    println!("wrote {out}");
    Ok(())
}

#[cfg(target_arch = "wasm32")]
fn main() {}
