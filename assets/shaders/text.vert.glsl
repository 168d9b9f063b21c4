// The text overlay: pixel coordinates (origin top left) and a colour per vertex.
layout(location = 0) in vec2 a_pos;
layout(location = 1) in vec4 a_color;

uniform vec2 u_screen; // framebuffer size in pixels
uniform float u_scale; // HiDPI content scale

out vec4 v_color;

void main() {
  vec2 p = a_pos * u_scale;
  gl_Position = vec4(p.x / u_screen.x * 2.0 - 1.0, 1.0 - p.y / u_screen.y * 2.0, 0.0, 1.0);
  v_color = a_color;
}
